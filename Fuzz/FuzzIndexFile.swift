import Foundation

// libFuzzer target: arbitrary bytes written to a file and loaded as an index file.
// Must throw a VectorIndexError or load an index whose search works; never crash.
let fuzzIndexPath = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-index-\(getpid()).index")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzIndexFileInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    // Half the time start from a valid file and overwrite a few bytes, so the fuzzer reaches
    // the checks behind the checksum.
    var bytes = Data(bytes: data, count: size)
    if size > 2, data[0] & 1 == 1 {
        var index = FlatIndex(dimension: 3)
        try? index.add(contentsOf: [("a", [1, 2, 3]), ("b", [0, 1, 0]), ("c", [-1, 0.5, 0])])
        // Codes too, so that the fuzzer reaches their sections (both int8 schemes).
        if data[0] & 2 != 0 {
            index.buildCodes([.int8, .binary], int8Scheme: data[0] & 4 != 0 ? .perVector : .perDimension)
        }
        let fingerprint = IndexFingerprint(
            modelIdentifier: "m", dimension: 3, pooling: "mean", normalized: true, tokenizerHash: "t")
        try? IndexFile.write(StoredIndex(index: index, fingerprint: fingerprint), to: fuzzIndexPath)
        var valid = (try? Data(contentsOf: fuzzIndexPath)) ?? Data()
        for i in stride(from: 1, to: size - 1, by: 2) where !valid.isEmpty {
            valid[Int(data[i]) * 7 % valid.count] = data[i + 1]
        }
        bytes = valid
    }
    try? bytes.write(to: fuzzIndexPath)
    do {
        // Skipping the vectors' checks lets damaged vectors through: searches must still not crash.
        let verification: IndexFile.Verification = size > 0 && data[0] & 8 != 0 ? .skippingVectors : .full
        let stored = try IndexFile.read(from: fuzzIndexPath, verification: verification)
        let query = [Float](repeating: 1, count: stored.index.dimension)
        for precision in stored.index.precisions {
            _ = try? stored.index.search(query, k: 3, precision: precision, rescore: 2)
        }
    } catch is VectorIndexError {
    } catch {
        preconditionFailure("untyped error \(error)")
    }
    return 0
}
