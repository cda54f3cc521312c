/// `BertEmbeddings`: word + position + token-type (segment 0) embeddings, then LayerNorm.
struct BertEmbeddings {
    let weights: BertWeights
    let configuration: BertConfiguration

    /// `hidden[t] = LayerNorm(word[ids[t]] + position[t] + type[0])` for one sequence.
    /// `ids: [T]` (checked by the caller), `hidden: [T, H]`.
    func apply(ids: [Int], into hidden: UnsafeMutablePointer<Float>) {
        let h = configuration.hiddenSize
        weights.wordEmbeddings.withUnsafeBufferPointer { word in
            weights.positionEmbeddings.withUnsafeBufferPointer { position in
                weights.tokenTypeEmbeddings.withUnsafeBufferPointer { type in
                    for (t, id) in ids.enumerated() {
                        let row = hidden + t * h
                        for j in 0..<h { row[j] = word[id * h + j] + position[t * h + j] + type[j] }
                    }
                }
            }
        }
        weights.embeddingsLayerNorm.apply(hidden, rows: ids.count, epsilon: configuration.layerNormEpsilon)
    }
}
