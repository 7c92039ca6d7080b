#!/usr/bin/env bash
# Qwen3.5 NVFP4 B300 SGLang MTP agentic launcher (fixture): knob set in the eval branch.
if [ "${EVAL_ONLY}" = "true" ]; then
    export SGLANG_SIMULATE_ACC_LEN=3.39
fi
python3 -m sglang.launch_server --model-path nvidia/Qwen3.5-397B-A17B-NVFP4 \
    --speculative-algorithm NEXTN --speculative-num-steps 3 --speculative-eagle-topk 1 \
    --default-chat-template-kwargs '{"enable_thinking": true}'
