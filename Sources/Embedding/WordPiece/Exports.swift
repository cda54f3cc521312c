// `Token` and `TokenizedText` moved to Tokenization; importing WordPiece still brings them.
@_exported import Tokenization
