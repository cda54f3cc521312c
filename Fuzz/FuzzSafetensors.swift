// libFuzzer target: arbitrary bytes as a safetensors file image. Must throw or parse; never crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSafetensorsInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    if let parsed = try? SafetensorsFile.parse(bytes, path: "fuzz") {
        for (_, info) in parsed.tensors {
            precondition(info.range.upperBound <= size - parsed.dataOffset)
        }
    }
    return 0
}
