#!/usr/bin/env bash
# GLM-5.2 NVFP4 B200 SGLang MTP agentic launcher (fixture).
HF_MODEL_ID="${HF_MODEL_ID:-nvidia/GLM-5.2-NVFP4}"
SPEC_ARGS=(
    --speculative-algorithm EAGLE
    --speculative-num-steps 3
    --speculative-eagle-topk 1
    --speculative-num-draft-tokens 4
)
# 2.99 is glm5.2_mtp thinking_on K=3 (golden_al_distribution/glm5.2_mtp.yaml).
if [ "${EVAL_ONLY:-false}" != "true" ]; then
    export SGLANG_SIMULATE_ACC_LEN=2.99
    export SGLANG_SIMULATE_ACC_METHOD=match-expected
    export SGLANG_SIMULATE_ACC_TOKEN_MODE=real-draft-token
fi
python3 -m sglang.launch_server --model-path "$HF_MODEL_ID" "${SPEC_ARGS[@]}" \
    --chat-template "$MODEL_PATH/chat_template_thinking.jinja"
if [ "${EVAL_ONLY}" = "true" ]; then
    run_eval
fi
