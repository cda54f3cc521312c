extension BlockQuantizedMatrix {
    /// The matrices' rows one after another (`[Σ out, in]`), for fusing projections that read the
    /// same input (query, key and value; gate and up), exactly: when all are 4-bit with one zero
    /// point they stay so; otherwise every part becomes 8-bit with zero point 128 (a 4-bit code
    /// `u` with zero point `z` is the 8-bit code `u − z + 128`, same scale and minimum). Parts
    /// without minimums get zero minimums when another part has them.
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
        let narrow = parts.allSatisfy { $0.bits == 4 && $0.zeroPoint == parts[0].zeroPoint }
        let hasMins = parts.contains { $0.mins != nil }
        var codes: [UInt8] = []
        var scales: [UInt16] = []
        var mins: [UInt16] = []
        for part in parts {
            scales += part.scales
            if hasMins { mins += part.mins ?? [UInt16](repeating: 0, count: part.scales.count) }
            if narrow || part.bits == 8 {
                precondition(
                    narrow || part.zeroPoint == 128,
                    "BlockQuantizedMatrix(stacking:): 8-bit part with zero point \(part.zeroPoint)")
                codes += part.codes
                continue
            }
            // Widen 4-bit codes: block bytes hold elements i (low nibble) and i + 16 (high nibble).
            let shift = 128 - part.zeroPoint
            var wide = [UInt8](repeating: 0, count: part.outputSize * depth)
            for block in 0..<(part.codes.count / 16) {
                for i in 0..<16 {
                    let byte = part.codes[16 * block + i]
                    wide[32 * block + i] = UInt8(Int(byte & 0x0F) + shift)
                    wide[32 * block + 16 + i] = UInt8(Int(byte >> 4) + shift)
                }
            }
            codes += wide
        }
        self.init(
            outputSize: parts.reduce(0) { $0 + $1.outputSize }, inputSize: depth, bits: narrow ? 4 : 8,
            zeroPoint: narrow ? parts[0].zeroPoint : 128, codes: codes, scales: scales, mins: hasMins ? mins : nil)
    }
}
