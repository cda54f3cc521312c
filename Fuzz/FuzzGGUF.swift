// libFuzzer target: arbitrary bytes as a GGUF file. Must throw or parse; never crash. When it
// parses, every metadata accessor runs and the first rows of every supported tensor are dequantized
// (small tensors whole, and their blocks as the block products read them).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGGUFInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let file = try? GGUFFile(bytes: Array(UnsafeBufferPointer(start: data, count: size))) else { return 0 }
    for entry in file.metadata.entries {
        _ = try? file.metadata.string(entry.key)
        _ = try? file.metadata.integer(entry.key)
        _ = try? file.metadata.float(entry.key)
        _ = try? file.metadata.bool(entry.key)
        _ = try? file.metadata.strings(entry.key)
        _ = try? file.metadata.integers(entry.key)
        _ = try? file.metadata.floats(entry.key)
    }
    for tensor in file.tensors {
        precondition(file.dataOffset + tensor.offset + tensor.byteCount <= size)
        precondition(tensor.elementCount == tensor.rowLength * tensor.rowCount)
        precondition(tensor.byteCount == tensor.rowByteCount * tensor.rowCount)
        file.withTensorBytes(tensor) { precondition($0.count == tensor.byteCount) }
        guard tensor.type.isSupported else {
            precondition((try? file.dequantize(tensor)) == nil)
            continue
        }
        let rows = min(tensor.rowCount, 2)
        if let values = try? file.dequantize(tensor, rows: 0..<rows) {
            precondition(values.count == rows * tensor.rowLength)
            if tensor.type.blockSize > 1 { precondition(values.allSatisfy(\.isFinite)) }
        }
        if tensor.elementCount <= 1 << 16 {
            _ = try? file.dequantize(tensor)
            // The decoder's native blocks: the same checks, never a crash.
            if tensor.dimensions.count <= 2, tensor.rowLength % 32 == 0 { _ = try? file.blockCodes(tensor) }
        }
    }
    return 0
}
