import VectorIndex

/// How a store's semantic side reads its vectors (`ChunkStore.setVectorSearch(_:)`): every
/// vector, exactly (both stores); an index file's int8 or binary codes, rescored exactly
/// (`EmbeddingStore`); or pgvector's HNSW index (`PostgresStore`). The one type for it in both
/// stores and on the command line (`--precision`, spelled as `name`).
///
/// `SearchPrecision` (VectorIndex) stays beside it, for a reason: it is `FlatIndex`'s own choice
/// of codes, in a module that knows nothing of stores or databases; `int8` and `binary` here name
/// those codes (`codes`).
public enum VectorSearch: Sendable, Equatable, CustomStringConvertible {
    /// Every vector: the exact top-k (both stores).
    case exact
    /// int8 codes, then `k × rescore` candidates rescored exactly (nil: `SearchPrecision.int8.defaultRescore`).
    case int8(rescore: Int? = nil)
    /// Binary codes, then `k × rescore` candidates rescored exactly (nil: `SearchPrecision.binary.defaultRescore`).
    case binary(rescore: Int? = nil)
    /// pgvector's HNSW index, `efSearch` candidates per query (its `hnsw.ef_search`; more is
    /// slower and closer to exact).
    case hnsw(efSearch: Int = 40)

    /// Every method's name, in the order help lists them.
    public static let names = ["exact", "int8", "binary", "hnsw"]

    /// The method's name: `exact`, `int8`, `binary` or `hnsw`.
    public var name: String {
        switch self {
        case .exact: return "exact"
        case .int8: return "int8"
        case .binary: return "binary"
        case .hnsw: return "hnsw"
        }
    }

    public var description: String { name }

    /// The search named `name` (one of `names`), with `rescore` for codes and `efSearch` for
    /// HNSW (each ignored by the other methods); nil for an unknown name.
    public init?(name: String, rescore: Int? = nil, efSearch: Int = 40) {
        switch name {
        case "exact": self = .exact
        case "int8": self = .int8(rescore: rescore)
        case "binary": self = .binary(rescore: rescore)
        case "hnsw": self = .hnsw(efSearch: efSearch)
        default: return nil
        }
    }

    /// The codes an index file scans for it: `.exact` for exact search, `.int8` or `.binary`;
    /// nil for HNSW, which an index file does not have.
    public var codes: SearchPrecision? {
        switch self {
        case .exact: return .exact
        case .int8: return .int8
        case .binary: return .binary
        case .hnsw: return nil
        }
    }

    /// The rescore factor given with codes (nil: the codes' default, or not a code search).
    public var rescore: Int? {
        switch self {
        case .int8(let rescore), .binary(let rescore): return rescore
        case .exact, .hnsw: return nil
        }
    }
}
