#!/usr/bin/env bash
# MiniMax-M3 NVFP4 B300 TensorRT-LLM EAGLE3-GQA agentic launcher (fixture).
DRAFT_MODEL="Inferact/MiniMax-M3-EAGLE3-GQA"
DRAFT_MODEL_PATH="/data/models/${DRAFT_MODEL##*/}"
cat > config.yaml <<EOF2
speculative_config:
    decoding_type: Eagle3
    max_draft_len: 3
    speculative_model: $DRAFT_MODEL_PATH
EOF2
if [ "$EVAL_ONLY" = "true" ]; then
    unset TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS
else
    export TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.78
fi
trtllm-serve "$MODEL_PATH" --config config.yaml
if [ "${EVAL_ONLY}" = "true" ]; then
    run_eval
fi
