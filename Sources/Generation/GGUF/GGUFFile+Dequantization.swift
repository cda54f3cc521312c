extension GGUFFile {
    /// The whole tensor as `Float`, row-major: `rowCount` rows of `rowLength` values (for a
    /// Hugging Face weight `[out, in]`, `out` rows of `in` values).
    ///
    /// Float types are converted exactly; infinities and NaNs in F32, F16 and BF16 data are kept.
    /// A quantized block whose scale or minimum is infinite or NaN is refused, since every value
    /// of the block would be non-finite: finite scales always give finite values.
    /// - Precondition: `tensor` is one of this file's ``tensors``.
    /// - Throws: `GGUFError` `unsupportedType` when the type is not in ``GGMLType/supported``;
    ///   `nonFiniteScale` naming the block and the field.
    /// - Complexity: O(elements), single-threaded.
    package func dequantize(_ tensor: GGUFTensorInfo) throws(GGUFError) -> [Float] {
        try dequantize(tensor, rows: 0..<tensor.rowCount)
    }

    /// The rows `rows` of the tensor as `Float`, row-major: `rows.count × rowLength` values.
    /// Looks up a few rows of an embedding table without dequantizing the rest.
    /// - Precondition: `tensor` is one of this file's ``tensors``.
    /// - Throws: `GGUFError` `rowsOutOfRange` unless `rows` lies within `0..<rowCount`;
    ///   `unsupportedType`; `nonFiniteScale`.
    /// - Complexity: O(`rows.count × rowLength`).
    package func dequantize(_ tensor: GGUFTensorInfo, rows: Range<Int>) throws(GGUFError) -> [Float] {
        try checkRows(tensor, rows)
        let count = rows.count * tensor.rowLength
        var failure: GGUFError?
        let values = [Float](unsafeUninitializedCapacity: count) { buffer, initialized in
            guard let start = buffer.baseAddress, count > 0 else { return }
            do throws(GGUFError) {
                try dequantizeRows(tensor, rows: rows, into: start)
                initialized = count
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        return values
    }

    /// Writes the rows `rows` of the tensor to `output` as `rows.count × rowLength` floats,
    /// row-major.
    /// - Parameters:
    ///   - output: room for `rows.count × tensor.rowLength` floats.
    ///   - kernel: `.reference` runs the plain loops, for tests.
    /// - Precondition: `tensor` is one of this file's ``tensors``.
    /// - Throws: `GGUFError` `rowsOutOfRange` unless `rows` lies within `0..<rowCount`;
    ///   `unsupportedType`; `nonFiniteScale` naming the block and the field, when `output` may hold
    ///   some rows already written.
    /// - Complexity: O(`rows.count × rowLength`).
    package func dequantizeRows(
        _ tensor: GGUFTensorInfo, rows: Range<Int>, into output: UnsafeMutablePointer<Float>,
        kernel: DequantizationKernel = .fast
    ) throws(GGUFError) {
        try checkRows(tensor, rows)
        let type = tensor.type
        let blocksPerRow = tensor.rowLength / type.blockSize
        let firstBlock = rows.lowerBound * blocksPerRow
        let blockCount = rows.count * blocksPerRow
        guard blockCount > 0, let base = storage.bytes.baseAddress else { return }
        // In range: the tensor's bytes were checked against the file size when it was opened.
        let tensorStart = dataOffset + tensor.offset
        // Chunks of about 8K values: the scale check and the conversion read the same bytes from cache.
        let chunk = max(1, 8192 / type.blockSize)
        try withExtendedLifetime(storage) { () throws(GGUFError) in
            for done in stride(from: 0, to: blockCount, by: chunk) {
                let n = min(chunk, blockCount - done)
                let blocks = base + tensorStart + (firstBlock + done) * type.blockByteCount
                if let bad = Dequantization.firstNonFiniteScale(type, blocks, count: n) {
                    let block = firstBlock + done + bad.block
                    throw GGUFError(
                        .nonFiniteScale, path: path, offset: tensorStart + block * type.blockByteCount,
                        subject: GGUFError.tensor(tensor.name),
                        detail:
                            "\(type.name) block \(block) (row \(block / blocksPerRow)) has a non-finite \(bad.field)")
                }
                Dequantization.dequantize(type, blocks, count: n, into: output + done * type.blockSize, kernel: kernel)
            }
        }
    }

    private func checkRows(_ tensor: GGUFTensorInfo, _ rows: Range<Int>) throws(GGUFError) {
        checkOwnership(tensor)
        guard tensor.type.isSupported else {
            throw GGUFError(
                .unsupportedType, path: path, subject: GGUFError.tensor(tensor.name),
                detail: "\(tensor.type.name) is not supported; supported: \(GGMLType.supportedNames)")
        }
        guard rows.lowerBound >= 0, rows.upperBound <= tensor.rowCount else {
            throw GGUFError(
                .rowsOutOfRange, path: path, subject: GGUFError.tensor(tensor.name),
                detail: "rows \(rows) are outside the tensor's rows 0..<\(tensor.rowCount)")
        }
    }
}
