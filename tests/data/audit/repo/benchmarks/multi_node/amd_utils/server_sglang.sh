#!/bin/bash
# Disaggregated SGLang server launcher shared by agentic and fixed-length runs (fixture).
MODEL_NAME="${MODEL_NAME:-}"
DECODE_MTP_SIZE="${DECODE_MTP_SIZE:-0}"
eval "$(python3 -c "
import os
# a comment with an apostrophe: it's python, not shell
if os.environ.get('IS_AGENTIC'):
    print('MODE=agentic')
")"
DECODE_SIM_ACC_ENV=""
if [[ "$DECODE_MTP_SIZE" -gt 0 ]] && [[ "${IS_AGENTIC:-0}" == "1" ]]; then
    if [[ "${EVAL_ONLY:-false}" == "true" ]]; then
        echo "eval: real acceptance"
    else
        GOLDEN_AL=""
        case "${MODEL_NAME}:${DECODE_MTP_SIZE}" in
            *DeepSeek-V4*:2) GOLDEN_AL=2.27 ;;
            *DeepSeek-V4*:3) GOLDEN_AL=2.50 ;;
        esac
        if [[ -n "$GOLDEN_AL" ]]; then
            DECODE_SIM_ACC_ENV="SGLANG_SIMULATE_ACC_LEN=${GOLDEN_AL} SGLANG_SIMULATE_ACC_METHOD=match-expected"
        fi
    fi
fi
DECODE_CMD="${DECODE_SIM_ACC_ENV} python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V4-Pro \
    --speculative-algorithm EAGLE --speculative-num-steps ${DECODE_MTP_SIZE} --speculative-eagle-topk 1"
eval "$DECODE_CMD"
