#!/usr/bin/env bash
# DeepSeek-V4 FP4 MI355X ATOM launcher (fixture): acceptance flag without --method.
python3 -m atom.entrypoints.openai.api_server --model deepseek-ai/DeepSeek-V4-Pro \
    --num-speculative-tokens 3 --spec-decode-acceptance-length 2.49
