extension BlockQuantizedMatrix {
    /// The matrices' rows one after another (`[Σ out, in]`), for fusing projections that read the
    /// same input (query, key and value; gate and up), exactly: when all are 4-bit with one zero
    /// point they stay so; when all are 4- or 5-bit with one zero point they become 5-bit (a 4-bit
    /// part's fifth bits 0); otherwise every part becomes 8-bit with zero point 128 (a code `u`
    /// with zero point `z` is the 8-bit code `u − z + 128`, same scale and minimum). Parts without
    /// minimums get zero minimums when another part has them.
    /// - Precondition: at least one matrix; all of the same depth; every zero point of an 8-bit
    ///   part is 128 (as GGUF's conversions make them).
    /// - Complexity: O(Σ out·in) (the codes are copied).
    package init(stacking parts: [BlockQuantizedMatrix]) {
        precondition(!parts.isEmpty, "BlockQuantizedMatrix(stacking:): no parts")
        let depth = parts[0].inputSize
        precondition(
            parts.allSatisfy { $0.inputSize == depth }, "BlockQuantizedMatrix(stacking:): parts of different depths")
        if parts.count == 1 {
            self = parts[0]
            return
        }
        let sameZero = parts.allSatisfy { $0.zeroPoint == parts[0].zeroPoint }
        let bits =
            sameZero && parts.allSatisfy({ $0.bits == 4 }) ? 4 : sameZero && parts.allSatisfy({ $0.bits != 8 }) ? 5 : 8
        let hasMins = parts.contains { $0.mins != nil }
        var codes: [UInt8] = []
        var highBits: [UInt8] = []
        var scales: [UInt16] = []
        var mins: [UInt16] = []
        for part in parts {
            scales += part.scales
            if hasMins { mins += part.mins ?? [UInt16](repeating: 0, count: part.scales.count) }
            if bits != 8 || part.bits == 8 {
                precondition(
                    bits != 8 || part.zeroPoint == 128,
                    "BlockQuantizedMatrix(stacking:): 8-bit part with zero point \(part.zeroPoint)")
                codes += part.codes
                if bits == 5 { highBits += part.highBits ?? [UInt8](repeating: 0, count: part.codes.count / 4) }
                continue
            }
            // Widen 4- and 5-bit codes (in element order, as `code(row:column:)` reads them).
            let shift = 128 - part.zeroPoint
            var wide = [UInt8](repeating: 0, count: part.outputSize * depth)
            for j in 0..<part.outputSize {
                for k in 0..<depth { wide[j * depth + k] = UInt8(part.code(row: j, column: k) + shift) }
            }
            codes += wide
        }
        self.init(
            outputSize: parts.reduce(0) { $0 + $1.outputSize }, inputSize: depth, bits: bits,
            zeroPoint: bits == 8 ? 128 : parts[0].zeroPoint, codes: codes, highBits: bits == 5 ? highBits : nil,
            scales: scales, mins: hasMins ? mins : nil)
    }
}
