// The GGUF reader: metadata, tensor infos and dequantization of every supported block type.
