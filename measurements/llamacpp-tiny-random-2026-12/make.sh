#!/usr/bin/env bash
# Re-make this run: `goldenal measure` against a real llama-server doing real draft-model
# speculative decoding with a TINY RANDOM target and draft.  Its AL values describe those
# random weights only: this is NOT a golden curve and must never become one.
#
# Needs the repository installed with its test extra (pip install -e '.[test]': goldenal,
# gguf, numpy, filelock), a C/C++ compiler for the first llama-server build, and curl.
#
#     bash measurements/llamacpp-tiny-random-2026-12/make.sh
#
# Steps:
#  1. llama-server from the llama.cpp tree vendored in the llama-cpp-python 0.3.36 sdist,
#     built once for CPU and cached outside the clone (tests/e2e/llama_build.py).
#  2. Tiny llama-architecture GGUF models written with gguf (tests/e2e/tiny_models.py):
#     target = seeded random weights (seed 0, 512-piece vocabulary, n_embd 64, 2 blocks),
#     draft = the target plus 0.1 x N(0, 1) noise (noise seed 1), so greedy verification
#     accepts some drafts and rejects others.
#  3. For K = 1, 2, 3: start llama-server with the draft model at K, run one
#     `goldenal measure` cell into the same run directory (marked `not_golden`, so
#     `goldenal fit --golden-dir` refuses it without --allow-not-golden), stop the server.
#  4. Replace the run files beside this script with the new ones.
#
# The models are written to a temporary directory and deleted: no GGUF file is kept.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
name="$(basename "$here")"   # the run id measure writes
KS=(1 2 3)
TARGET_SEED=0
DRAFT_NOISE=0.1
DRAFT_NOISE_SEED=1
# run.yaml's not_golden: fit refuses to write a golden directory from this run
NOT_GOLDEN="TINY RANDOM MODEL: seeded random weights (512-piece vocabulary, two blocks of"
NOT_GOLDEN+=" width 64); its AL values describe those weights only and are NOT a golden curve"

work="$(mktemp -d "${TMPDIR:-/tmp}/goldenal-tiny-run.XXXXXX")"
server=""
cleanup() {
    if [ -n "$server" ]; then
        kill "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# 1. the server (built here when the cache has none)
root="$(PYTHONPATH="$repo/tests/e2e" python -c \
    'import llama_build; print(llama_build.ensure_llama_server())')"

# 2. the models
PYTHONPATH="$repo/tests/e2e" python - "$root" "$work" "$TARGET_SEED" "$DRAFT_NOISE" \
    "$DRAFT_NOISE_SEED" <<'EOF'
import sys
from pathlib import Path

from tiny_models import VOCAB_FILE, tokenizer_fields, write_model

root, work = Path(sys.argv[1]), Path(sys.argv[2])
seed, noise, noise_seed = int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
tok = tokenizer_fields(root / "models" / VOCAB_FILE)
write_model(work / "target.gguf", tokenizer=tok, seed=seed, name="goldenal-tiny-random")
write_model(work / "draft.gguf", tokenizer=tok, seed=seed, noise=noise, noise_seed=noise_seed,
            name="goldenal-tiny-random-draft")
EOF

# 3. one server and one measure cell per K
for k in "${KS[@]}"; do
    port="$(python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    LD_LIBRARY_PATH="$root/bin" "$root/bin/llama-server" \
        --model "$work/target.gguf" --alias goldenal-tiny-random --host 127.0.0.1 --port "$port" \
        --ctx-size 1024 --parallel 1 --threads 1 --threads-batch 1 --metrics --no-webui \
        --spec-type draft-simple --spec-draft-model "$work/draft.gguf" \
        --spec-draft-n-max "$k" --spec-draft-threads 1 \
        >"$work/server_k$k.log" 2>&1 &
    server=$!
    until curl -sf "http://127.0.0.1:$port/health" >/dev/null; do
        if ! kill -0 "$server" 2>/dev/null; then
            tail -20 "$work/server_k$k.log" >&2
            echo "llama-server (K=$k) exited before it was ready" >&2
            exit 1
        fi
        sleep 0.2
    done
    goldenal measure "http://127.0.0.1:$port" --out "$work/$name" \
        --model goldenal-tiny-random --draft goldenal-tiny-random-draft \
        --method draft-simple --curve-id goldenal_tiny_random_draft \
        --k "$k" --thinking off --prompts "$here/prompts.jsonl" \
        --max-tokens 256 --ignore-eos --seed 1 \
        --not-golden "$NOT_GOLDEN" \
        --note "TINY RANDOM MODEL (seeded random weights, 512-piece vocabulary): its AL values are NOT a golden curve. Made by measurements/llamacpp-tiny-random-2026-12/make.sh."
    kill "$server"
    wait "$server" 2>/dev/null || true
    server=""
done

# 4. the run files beside this script (README.md, make.sh and prompts.jsonl stay)
find "$here" -maxdepth 1 -type f \( -name 'run.yaml' -o -name 'metrics_*.prom' \
    -o -name 'requests_*.jsonl' -o -name 'server_*.json' \) -delete
{
    echo "# TINY RANDOM MODEL: a real llama-server run of seeded random weights; its AL"
    echo "# values are NOT a golden curve.  Made by make.sh beside this file (see README.md)."
    cat "$work/$name/run.yaml"
} >"$here/run.yaml"
find "$work/$name" -maxdepth 1 -type f ! -name run.yaml -exec cp {} "$here/" \;
echo "wrote $here"
