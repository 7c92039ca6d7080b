#!/usr/bin/env bash
# Re-make this run: `goldenal measure` against a real llama-server doing real draft-model
# speculative decoding with a TINY RANDOM target and draft.  Its AL values describe those
# random weights only: this is NOT a golden curve and must never become one.
#
# Needs the repository installed with its test extra (pip install -e '.[test]': goldenal,
# gguf, numpy, filelock) and a C/C++ compiler for the first llama-server build.
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
#  3. One `goldenal measure --server-cmd ... --k 1,2,3` (the README's command): for each K
#     it starts llama-server with the draft model at K on a free port, waits for /health,
#     measures one cell into the run directory (marked `not_golden`, so `goldenal fit
#     --golden-dir` refuses it without --allow-not-golden), stops the server and keeps its
#     log in the run (server_off_k{K}.log).
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
trap 'rm -rf "$work"' EXIT   # measure stops every server it starts itself

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

# 3. one command: a server per K ({k}) on a free port ({port}), started, measured, stopped
server="LD_LIBRARY_PATH=$(printf %q "$root/bin") $(printf %q "$root/bin/llama-server")"
server+=" --model $(printf %q "$work/target.gguf") --alias goldenal-tiny-random"
server+=" --host 127.0.0.1 --port {port} --ctx-size 1024 --parallel 1 --threads 1"
server+=" --threads-batch 1 --metrics --no-webui --spec-type draft-simple"
server+=" --spec-draft-model $(printf %q "$work/draft.gguf") --spec-draft-n-max {k}"
server+=" --spec-draft-threads 1"
goldenal measure --server-cmd "$server" --k "$(IFS=,; echo "${KS[*]}")" \
    --out "$work/$name" --model goldenal-tiny-random --draft goldenal-tiny-random-draft \
    --method draft-simple --curve-id goldenal_tiny_random_draft \
    --thinking off --prompts "$here/prompts.jsonl" \
    --max-tokens 256 --ignore-eos --seed 1 \
    --not-golden "$NOT_GOLDEN" \
    --note "TINY RANDOM MODEL (seeded random weights, 512-piece vocabulary): its AL values are NOT a golden curve. Made by measurements/llamacpp-tiny-random-2026-12/make.sh."

# 4. the run files beside this script (README.md, make.sh and prompts.jsonl stay)
find "$here" -maxdepth 1 -type f \( -name 'run.yaml' -o -name 'metrics_*.prom' \
    -o -name 'requests_*.jsonl' -o -name 'server_*.json' -o -name 'server_*.log' \) -delete
{
    echo "# TINY RANDOM MODEL: a real llama-server run of seeded random weights; its AL"
    echo "# values are NOT a golden curve.  Made by make.sh beside this file (see README.md)."
    cat "$work/$name/run.yaml"
} >"$here/run.yaml"
find "$work/$name" -maxdepth 1 -type f ! -name run.yaml -exec cp {} "$here/" \;
echo "wrote $here"
