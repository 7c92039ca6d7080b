#!/usr/bin/env bash
# GLM-5.2 FP8 H200 SGLang MTP agentic launcher, thinking off (fixture).
export SGLANG_SIMULATE_ACC_LEN=2.99
export SGLANG_SIMULATE_ACC_METHOD=match-expected
python3 -m sglang.launch_server --model-path zai-org/GLM-5.2-FP8 \
    --speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1 \
    --default-chat-template-kwargs '{"enable_thinking": false}'
