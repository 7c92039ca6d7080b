#!/usr/bin/env bash
# DeepSeek-V4 FP4 B200 vLLM MTP agentic launcher (fixture).
set -euo pipefail
check_env_vars MODEL TP CONC EVAL_ONLY
NUM_SPEC_TOKENS=3
# Golden AL: golden_al_distribution/dsv4_mtp.yaml thinking_on K=3 = 2.49.
if [ "${EVAL_ONLY:-false}" = "true" ]; then
    SPEC_CONFIG="{\"method\": \"mtp\", \"num_speculative_tokens\": $NUM_SPEC_TOKENS}"
else
    SPEC_CONFIG="{\"method\": \"mtp\", \"num_speculative_tokens\": $NUM_SPEC_TOKENS, \"rejection_sample_method\": \"synthetic\", \"synthetic_acceptance_length\": 2.49}"
fi
vllm serve "$MODEL" \
    --tensor-parallel-size "$TP" \
    --default-chat-template-kwargs '{"thinking": true, "reasoning_effort": "high"}' \
    --speculative-config "$SPEC_CONFIG"
if [ "${EVAL_ONLY}" = "true" ]; then
    run_eval --framework lm-eval
fi
