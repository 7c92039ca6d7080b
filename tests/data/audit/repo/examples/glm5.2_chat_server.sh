#!/usr/bin/env bash
# A chat playground for GLM-5.2 with MTP: people talk to this server.
export SGLANG_SIMULATE_ACC_LEN=2.99
python3 -m sglang.launch_server --model-path nvidia/GLM-5.2-NVFP4 --speculative-num-steps 3 \
  --speculative-eagle-topk 1 --default-chat-template-kwargs '{"enable_thinking": true}'
