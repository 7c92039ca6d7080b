#!/usr/bin/env bash
# Qwen3.5 FP8 H200 SGLang MTP agentic launcher (fixture): no synthetic knob.
python3 -m sglang.launch_server --model-path Qwen/Qwen3.5-397B-A17B-FP8 \
    --speculative-algorithm NEXTN \
    --speculative-num-steps 3 \
    --speculative-eagle-topk 1
