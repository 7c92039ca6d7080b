#!/usr/bin/env bash
# ATOM single-node launcher (MTP)
python -m atom.entrypoints.openai_server \
  --model deepseek-ai/DeepSeek-V4-Pro \
  --tensor-parallel-size 8 \
  --method mtp \
  --num-speculative-tokens 3 --spec-decode-acceptance-length 2.49 \
  --server-port 8000
