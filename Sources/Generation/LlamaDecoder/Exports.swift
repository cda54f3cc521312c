// The types of other modules that LlamaDecoder's public API shows, so that `import LlamaDecoder`
// is all a user needs: the tokenizer, chat messages and templates, tokens, the precision enum, and
// the GGUF reader's error a `LlamaDecoderError` keeps as its cause.
@_exported import BytePairEncoding
@_exported import ChatTemplates
@_exported import Tokenization

@_exported import struct GGUF.GGUFError
@_exported import enum LinearAlgebra.Quantization
@_exported import enum ModelAssets.AssetInstallationError
@_exported import struct ModelAssets.AssetPackage
