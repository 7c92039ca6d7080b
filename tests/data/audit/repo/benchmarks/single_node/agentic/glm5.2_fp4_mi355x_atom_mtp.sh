#!/usr/bin/env bash
# GLM-5.2 FP4 MI355X ATOM MTP agentic launcher (fixture): the rate was derived for K=3, K=2 is served.
SIMULATE_ACC_LEN=2.50
RATE_K=3
NUM_SPEC_TOKENS=2
SPEC_ACCEPTANCE_RATE=$(awk "BEGIN{print ($SIMULATE_ACC_LEN-1)/$RATE_K}")
case "$EVAL_ONLY" in
    true)
        SPEC_ARGS=(--method mtp --num-speculative-tokens "$NUM_SPEC_TOKENS")
        ;;
    *)
        SPEC_ARGS=(--method mtp --num-speculative-tokens "$NUM_SPEC_TOKENS" --spec-decode-acceptance-rate "$SPEC_ACCEPTANCE_RATE")
        ;;
esac
python3 -m atom.entrypoints.openai.api_server --model amd/GLM-5.2-MXFP4 "${SPEC_ARGS[@]}"
