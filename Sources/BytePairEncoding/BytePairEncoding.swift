// Byte-level BPE from GGUF metadata, with ranges; chat templates.
