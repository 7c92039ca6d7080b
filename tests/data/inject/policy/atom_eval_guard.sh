#!/usr/bin/env bash
# Agentic launcher: GLM-5.2 on MI355X with ATOM and MTP (test fixture).
set -euo pipefail
MODEL=${MODEL:-zai-org/GLM-5.2-FP8}

# Golden AL for K=3 (curve glm5.2_mtp) and the rate form ATOM also accepts.
SIMULATE_ACC_LEN=2.99
NUM_SPEC_TOKENS=3
SPEC_ACCEPTANCE_RATE=$(awk "BEGIN{print ($SIMULATE_ACC_LEN-1)/$NUM_SPEC_TOKENS}")

if [ "${EVAL_ONLY}" = "true" ]; then
    SPEC_ARGS=(
        --method mtp
        --num-speculative-tokens 3
    )
else
    SPEC_ARGS=(
        --method mtp
        --num-speculative-tokens 3
        
    )
fi

python3 -m atom.entrypoints.openai_server --model "$MODEL" --server-port 8888 \
    --tensor-parallel-size 8 --kv_cache_dtype fp8 "${SPEC_ARGS[@]}" > server.log 2>&1 &
