// The types of other modules that Embeddings' public API shows, so that `import Embeddings` is
// all a user needs: token lists and the tokenizer protocol, the token-vector matrix, and the
// asset channel's package description and installation error, how an encoder multiplies, and
// where the library's warnings go.
@_exported import Tokenization

@_exported import enum LinearAlgebra.Diagnostics
@_exported import struct LinearAlgebra.Matrix
@_exported import enum LinearAlgebra.Quantization
@_exported import enum ModelAssets.AssetInstallationError
@_exported import struct ModelAssets.AssetPackage
