enum _PlaceholderWordPiece {}
