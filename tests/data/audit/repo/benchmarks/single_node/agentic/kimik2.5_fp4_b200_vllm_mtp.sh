#!/usr/bin/env bash
# Kimi-K2.5 NVFP4 B200 vLLM EAGLE3 agentic launcher (fixture): a documented exception.
SPEC='{"method":"eagle3","model":"lightseekorg/kimi-k2.5-eagle3-mla","num_speculative_tokens":3,"rejection_sample_method":"synthetic","synthetic_acceptance_length":2.75}'  # goldenal: ignore[GAL201]
vllm serve nvidia/Kimi-K2.5-NVFP4 --speculative-config "$SPEC" \
    --default-chat-template-kwargs '{"thinking": true}'
