#!/usr/bin/env bash
# Foo-1 FP8 H100 SGLang MTP agentic launcher (fixture): model with no committed curve.
export SGLANG_SIMULATE_ACC_LEN=2.80
python3 -m sglang.launch_server --model-path acme/Foo-1-FP8 \
    --speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1
