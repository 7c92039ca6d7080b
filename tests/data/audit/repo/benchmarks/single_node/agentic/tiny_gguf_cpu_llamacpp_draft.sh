#!/usr/bin/env bash
# llama.cpp on CPU with a draft model; K is llama.cpp's default (3), so two rates are one short
MODEL=/models/tiny/target.gguf
llama-server -m "$MODEL" --spec-type draft-simple --spec-draft-model /models/tiny/draft.gguf \
    --spec-synth-rates 1,0.83 --port 8080
