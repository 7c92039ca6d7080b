#!/usr/bin/env bash
# Qwen3.5 FP8 MI300X SGLang MTP agentic launcher (fixture): multinomial simulation.
if [ "${EVAL_ONLY:-false}" != "true" ]; then
    export SGLANG_SIMULATE_ACC_LEN=3.39
    export SGLANG_SIMULATE_ACC_METHOD=multinomial
fi
python3 -m sglang.launch_server --model-path Qwen/Qwen3.5-397B-A17B-FP8 \
    --speculative-algorithm NEXTN --speculative-num-steps 3 --speculative-eagle-topk 1 \
    --default-chat-template-kwargs '{"enable_thinking": true}'
