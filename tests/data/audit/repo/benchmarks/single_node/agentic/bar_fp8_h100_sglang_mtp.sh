#!/usr/bin/env bash
# Bar-1 FP8 H100 SGLang MTP agentic launcher (fixture): model with no committed curve,
# value source stated.
# AL source: pending collection run for acme/Bar-1 (real verification, K=3).
export SGLANG_SIMULATE_ACC_LEN=2.70
python3 -m sglang.launch_server --model-path acme/Bar-1-FP8 \
    --speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1
