/// The description of one tensor in a GGUF file: name, dimensions, type and where its data is.
///
/// GGUF lists dimensions innermost first, as ggml's `ne`: `dimensions[0]` is the contiguous one,
/// the length of a row. A weight Hugging Face stores as `[out, in]` appears here as
/// `[in, out]`: ``rowCount`` rows (one per output) of ``rowLength`` weights (one per input).
/// Every derived count was checked against the file when it was opened and cannot overflow.
package struct GGUFTensorInfo: Sendable, Hashable, CustomStringConvertible {
    /// The tensor's name, as `blk.0.attn_q.weight`.
    package let name: String
    /// The dimensions, innermost (contiguous) first; at most four, empty for a scalar.
    package let dimensions: [Int]
    /// The element type.
    package let type: GGMLType
    /// Where the data starts, in bytes from the start of the file's data section.
    package let offset: Int
    /// The number of elements: the product of the dimensions.
    package let elementCount: Int
    /// The number of bytes of data.
    package let byteCount: Int

    init(name: String, dimensions: [Int], type: GGMLType, offset: Int, elementCount: Int, byteCount: Int) {
        self.name = name
        self.dimensions = dimensions
        self.type = type
        self.offset = offset
        self.elementCount = elementCount
        self.byteCount = byteCount
    }

    /// The number of elements in a row: the innermost dimension (1 for a scalar). Always a whole
    /// number of the type's blocks.
    package var rowLength: Int { dimensions.first ?? 1 }

    /// The number of rows: the product of every dimension but the innermost (1 for a vector).
    package var rowCount: Int { dimensions.dropFirst().reduce(1, *) }

    /// The number of bytes of one row.
    package var rowByteCount: Int { rowLength / type.blockSize * type.blockByteCount }

    /// `name type [d0, d1]`, as in `output_norm.weight F32 [576]`.
    package var description: String { "\(name) \(type.name) \(dimensions)" }
}
