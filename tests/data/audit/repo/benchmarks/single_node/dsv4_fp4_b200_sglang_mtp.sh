#!/usr/bin/env bash
# DeepSeek-V4 FP4 B200 SGLang MTP fixed-sequence-length launcher (fixture).
export SGLANG_SIMULATE_ACC_LEN=2.49
python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V4-Pro \
    --speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1
