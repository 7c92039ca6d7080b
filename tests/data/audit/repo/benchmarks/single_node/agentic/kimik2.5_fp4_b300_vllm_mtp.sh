#!/usr/bin/env bash
# Kimi-K2.5 NVFP4 B300 vLLM EAGLE3 agentic launcher (fixture): K comes from outside.
SPEC_CONFIG="{\"method\": \"eagle3\", \"model\": \"lightseekorg/kimi-k2.5-eagle3-mla\", \"num_speculative_tokens\": $NUM_SPEC_TOKENS, \"rejection_sample_method\": \"synthetic\", \"synthetic_acceptance_length\": 2.88}"
vllm serve nvidia/Kimi-K2.5-NVFP4 --speculative-config "$SPEC_CONFIG" \
    --default-chat-template-kwargs '{"thinking": true}'
