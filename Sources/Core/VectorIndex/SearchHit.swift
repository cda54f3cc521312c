/// One search result: the id, its cosine similarity to the query, and its row in the index.
public struct SearchHit: Equatable, Sendable {
    /// The id given when the vector was added.
    public var id: String
    /// Cosine similarity in [−1, 1] (vectors are unit-normalized, so this is a dot product).
    public var score: Float
    /// The vector's row in the index at the time of the search.
    public var row: Int

    /// A hit for the vector stored under `id` at `row`, scoring `score`.
    public init(id: String, score: Float, row: Int) {
        self.id = id
        self.score = score
        self.row = row
    }
}
