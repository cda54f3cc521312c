enum _PlaceholderEncoder {}
