// The causal decoder (llama, qwen2): KV cache, prefill, decode, sampling.
