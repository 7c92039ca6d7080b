#!/usr/bin/env bash
# MiniMax-M3 NVFP4 B200 vLLM EAGLE3-GQA agentic launcher (fixture).
DRAFT_MODEL="Inferact/MiniMax-M3-EAGLE3-GQA"
NUM_SPEC_TOKENS=3
SYNTHETIC_ACCEPT_LEN=2.83
if [[ -n "${MODEL_PATH:-}" ]]; then
    DRAFT_MODEL_PATH="/data/models/${DRAFT_MODEL##*/}"
else
    DRAFT_MODEL_PATH="$DRAFT_MODEL"
fi
if [ "${EVAL_ONLY:-}" = "true" ]; then
    SPEC_CONFIG=$(printf \
        '{"method":"eagle3","model":"%s","num_speculative_tokens":%d}' \
        "$DRAFT_MODEL_PATH" "$NUM_SPEC_TOKENS")
else
    SPEC_CONFIG=$(printf \
        '{"method":"eagle3","model":"%s","num_speculative_tokens":%d,"rejection_sample_method":"synthetic","synthetic_acceptance_length":%.2f}' \
        "$DRAFT_MODEL_PATH" "$NUM_SPEC_TOKENS" "$SYNTHETIC_ACCEPT_LEN")
fi
vllm serve "$MODEL_PATH" --speculative-config "$SPEC_CONFIG" \
    --default-chat-template-kwargs '{"thinking_mode":"enabled"}'
if [ "${EVAL_ONLY}" = "true" ]; then
    run_eval
fi
