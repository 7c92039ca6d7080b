#!/usr/bin/env bash
# Kimi-K3 FP4 MI355X ATOM DSpark agentic launcher (fixture): K and AL by concurrency.
if [ "$CONC" = 1 ]; then
    SPEC_DECODE_AL=3.54    # golden_al_distribution/kimik3_dspark.yaml thinking_on K=6
    NUM_SPEC_TOKENS=6
else
    SPEC_DECODE_AL=2.51
    NUM_SPEC_TOKENS=2
fi
if [ "${EVAL_ONLY}" = "true" ]; then
    SPEC_ARGS=(
        --method dspark
        --draft-model Inferact/Kimi-K3-DSpark
        --num-speculative-tokens "$NUM_SPEC_TOKENS"
    )
else
    SPEC_ARGS=(
        --method dspark
        --draft-model Inferact/Kimi-K3-DSpark
        --num-speculative-tokens "$NUM_SPEC_TOKENS"
        --spec-decode-acceptance-length "$SPEC_DECODE_AL"
    )
fi
python3 -m atom.entrypoints.openai.api_server --model "$MODEL" "${SPEC_ARGS[@]}"
