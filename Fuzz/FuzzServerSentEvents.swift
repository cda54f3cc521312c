// libFuzzer target: arbitrary bytes, as a remote server's event stream, through ServerSentEvents.
// Checks: no crash; the events do not depend on how the bytes are cut into pieces (whole, one
// byte at a time, and pieces cut at the input's own first byte value); a line over the limit is
// the one error, the same way each time.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzServerSentEventsInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    func events(_ pieces: [ArraySlice<UInt8>]) -> ([ServerSentEvents.Event], Bool) {
        var reader = ServerSentEvents(maximumLineBytes: 1024)
        var out: [ServerSentEvents.Event] = []
        for piece in pieces {
            do { out += try reader.read(piece) } catch { return (out, true) }
        }
        return (out, false)
    }
    let whole = events([bytes[...]])
    let single = events(bytes.indices.map { bytes[$0...$0] })
    let step = max(1, Int(bytes.first ?? 1))
    let chunked = events(stride(from: 0, to: bytes.count, by: step).map { bytes[$0..<min(bytes.count, $0 + step)] })
    precondition(whole.1 == single.1 && whole.1 == chunked.1, "the line limit is met one way only")
    // After the error the events of the failing call are dropped (the request fails anyway).
    guard !whole.1 else { return 0 }
    precondition(whole.0 == single.0, "one byte at a time differs")
    precondition(whole.0 == chunked.0, "pieces of \(step) differ")
    return 0
}
