#!/usr/bin/env bash
# Launcher fragments in the shapes single-node scripts use.
# SGLANG_SIMULATE_ACC_LEN=9.99 in a comment is not a setting.
NUM_SPEC_TOKENS=3
SYNTHETIC_ACCEPT_LEN=2.78
SPEC_ARGS=(
    --speculative-algorithm EAGLE
    --speculative-num-steps 3
)
if [ "${EVAL_ONLY:-false}" != "true" ]; then
    export SGLANG_SIMULATE_ACC_LEN=2.99
    export TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.78
fi
SPEC_CONFIG="{\"method\": \"mtp\", \"num_speculative_tokens\": $NUM_SPEC_TOKENS, \"rejection_sample_method\": \"synthetic\", \"synthetic_acceptance_length\": $SYNTHETIC_ACCEPT_LEN}"
