/// `BertEmbeddings`: word + position + token-type (segment 0) embeddings, then LayerNorm.
struct BertEmbeddings {
    let weights: BertWeights
    let configuration: BertConfiguration

    /// `hidden[t] = LayerNorm(word[ids[t]] + position[offset + t] + type[0])` for one sequence.
    /// `ids: [T]` (checked by the caller), `hidden: [T, H]`. Rows of a quantized word table are
    /// dequantized as they are gathered.
    func apply(ids: [Int], into hidden: UnsafeMutablePointer<Float>) {
        let h = configuration.hiddenSize
        let offset = configuration.positionOffset
        for (t, id) in ids.enumerated() { weights.wordEmbeddings.row(id, into: hidden + t * h) }
        weights.positionEmbeddings.withUnsafeBufferPointer { position in
            weights.tokenTypeEmbeddings.withUnsafeBufferPointer { type in
                for t in ids.indices {
                    let row = hidden + t * h
                    let p = (offset + t) * h
                    for j in 0..<h { row[j] = row[j] + position[p + j] + type[j] }
                }
            }
        }
        weights.embeddingsLayerNorm.apply(hidden, rows: ids.count, epsilon: configuration.layerNormEpsilon)
    }
}
