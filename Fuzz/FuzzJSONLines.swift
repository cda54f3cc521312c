import Foundation

// libFuzzer target: arbitrary bytes as one line of `embeddings embed` input.
// Must give a record or a CLIError.data; never crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONLinesInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    do {
        _ = try JSONLinesReader.parse(Data(bytes: data, count: size), line: 1)
    } catch CLIError.data {
    } catch {
        preconditionFailure("untyped error \(error)")
    }
    return 0
}
