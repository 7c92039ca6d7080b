#!/usr/bin/env bash
# Qwen3.5 NVFP4 B200 SGLang MTP agentic launcher (fixture): knob not guarded by EVAL_ONLY.
export SGLANG_SIMULATE_ACC_LEN=3.39
export SGLANG_SIMULATE_ACC_METHOD=match-expected
python3 -m sglang.launch_server --model-path nvidia/Qwen3.5-397B-A17B-NVFP4 \
    --speculative-algorithm NEXTN --speculative-num-steps 3 --speculative-eagle-topk 1 \
    --default-chat-template-kwargs '{"enable_thinking": true}'
if [ "${EVAL_ONLY}" = "true" ]; then
    run_eval
fi
