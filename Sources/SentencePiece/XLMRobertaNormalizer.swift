import Foundation

/// The normalization of XLM-RoBERTa's tokenizer, as Hugging Face `tokenizers` applies it, with
/// every output scalar tied to the bytes of the original string it came from.
///
/// Three steps, in order:
/// 1. **The precompiled character map** (SentencePiece's `nmt_nfkc` rule: NFKC, control
///    characters removed, white space turned into spaces). The model file carries it as a
///    table from one scalar to its replacement. `tokenizers` applies it per grapheme cluster: a
///    cluster shorter than 6 UTF-8 bytes whose beginning is a key of the map (a mapped scalar,
///    or the decomposed form of a precomposed character) is replaced as a whole by that key's
///    value; any other cluster is mapped scalar by scalar.
/// 2. **Runs of two or more spaces** become one space.
/// 3. **Metaspace**: every space becomes `▁` (U+2581), and a `▁` is put in front unless the
///    text already begins with one.
///
/// The alignment follows `tokenizers`' bookkeeping exactly, quirks included (a replaced cluster
/// is aligned to its first scalar; a collapsed run of spaces to its last space; a removed
/// character at the very start of a text shifts the alignment of what follows by one character),
/// so that token offsets match Hugging Face's.
public struct XLMRobertaNormalizer: Sendable {
    /// The metaspace marker, U+2581.
    public static let metaspace: Unicode.Scalar = "\u{2581}"

    private let table: [UInt32: [Unicode.Scalar]]
    /// Replacements for scalars below 128 (`nil`: unchanged), to skip the dictionary for ASCII.
    private let ascii: [[Unicode.Scalar]?]

    /// A normalizer from the model's table: scalar → its replacement (empty to remove it).
    /// - Throws: `SentencePieceError.invalidNormalization` for a key or value that is not a Unicode scalar.
    public init(table: [UInt32: [UInt32]]) throws {
        var converted = [UInt32: [Unicode.Scalar]](minimumCapacity: table.count)
        for (key, value) in table {
            guard Unicode.Scalar(key) != nil else { throw SentencePieceError.invalidNormalization(reason: "key \(key) is not a Unicode scalar") }
            var scalars = [Unicode.Scalar]()
            for v in value {
                guard let s = Unicode.Scalar(v) else { throw SentencePieceError.invalidNormalization(reason: "replacement \(v) of \(key) is not a Unicode scalar") }
                scalars.append(s)
            }
            converted[key] = scalars
        }
        self.table = converted
        self.ascii = (0..<128).map { converted[UInt32($0)] }
    }

    /// The number of scalars the table maps.
    public var count: Int { table.count }

    /// The table's entries, by scalar value.
    public var entries: [(key: UInt32, value: [Unicode.Scalar])] {
        table.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// The replacement of one scalar, or `nil` when the map leaves it unchanged.
    public func replacement(of scalar: Unicode.Scalar) -> [Unicode.Scalar]? {
        scalar.value < 128 ? ascii[Int(scalar.value)] : table[scalar.value]
    }

    /// Normalized text: its scalars and, for each, the UTF-8 byte range of the original string it
    /// is aligned to.
    public struct Normalized: Sendable {
        /// The normalized scalars.
        public var scalars: [Unicode.Scalar] = []
        /// One original UTF-8 byte range per scalar.
        public var alignments: [Range<Int>] = []
    }

    /// Normalizes `text`, whose first byte is at `byteOffset` in the string the alignments refer to.
    public func normalize(_ text: Substring, byteOffset: Int = 0) -> Normalized {
        // The original scalars and their byte ranges.
        var ranges = [Range<Int>]()
        // Step 1 as `tokenizers` records it: (scalar, change) where change 0 replaces the next
        // original scalar, +1 inserts, and −k also drops the k original scalars after it.
        var transformations = [(scalar: Unicode.Scalar, change: Int)]()
        transformations.reserveCapacity(text.utf8.count)
        ranges.reserveCapacity(text.utf8.count)
        var offset = byteOffset

        func replace(oldCount: Int, with new: [Unicode.Scalar]) {
            for s in new { transformations.append((s, 0)) }
            let diff = new.count - oldCount
            if diff > 0 {
                for k in (transformations.count - diff)..<transformations.count { transformations[k].change = 1 }
            } else if diff < 0, !transformations.isEmpty {
                transformations[transformations.count - 1].change += diff
            }
        }

        // Clusters repeat (vocalized Arabic, decomposed Latin): look each one up once per call.
        var clusterValues = [[UInt32]: [Unicode.Scalar]?]()
        for character in text {
            let scalars = character.unicodeScalars
            let start = offset
            for s in scalars {
                let length = UTF8.width(s)
                ranges.append(offset..<(offset + length))
                offset += length
            }
            let clusterBytes = offset - start
            if scalars.count > 1, clusterBytes < 6 {
                let key = scalars.map(\.value)
                let value: [Unicode.Scalar]?
                if let cached = clusterValues[key] {
                    value = cached
                } else {
                    value = clusterKeyValue(Array(scalars))
                    clusterValues[key] = value
                }
                if let value {
                    replace(oldCount: scalars.count, with: value)
                    continue
                }
            }
            for s in scalars {
                if let value = replacement(of: s) {
                    replace(oldCount: 1, with: value)
                } else {
                    transformations.append((s, 0))
                }
            }
        }

        // Apply the transformations the way `NormalizedString.transform` aligns them.
        var out = Normalized()
        out.scalars.reserveCapacity(transformations.count)
        out.alignments.reserveCapacity(transformations.count)
        var cursor = 0
        let empty = byteOffset..<byteOffset
        for (scalar, change) in transformations {
            let alignment: Range<Int>
            if change > 0 {
                alignment = cursor > 0 ? ranges[cursor - 1] : empty
            } else {
                alignment = cursor < ranges.count ? ranges[cursor] : (ranges.last.map { $0.upperBound..<$0.upperBound } ?? empty)
                cursor += 1
            }
            if change < 0 { cursor += -change }
            out.scalars.append(scalar)
            out.alignments.append(alignment)
        }

        // Step 2: a run of spaces becomes one space, aligned to the run's last space.
        var collapsed = Normalized()
        collapsed.scalars.reserveCapacity(out.scalars.count + 1)
        collapsed.alignments.reserveCapacity(out.scalars.count + 1)
        var i = 0
        while i < out.scalars.count {
            if out.scalars[i] == " " {
                var j = i + 1
                while j < out.scalars.count, out.scalars[j] == " " { j += 1 }
                collapsed.scalars.append(" ")
                collapsed.alignments.append(out.alignments[j - 1])
                i = j
            } else {
                collapsed.scalars.append(out.scalars[i])
                collapsed.alignments.append(out.alignments[i])
                i += 1
            }
        }

        // Step 3: metaspace, with the leading marker aligned to the first scalar.
        for k in collapsed.scalars.indices where collapsed.scalars[k] == " " { collapsed.scalars[k] = Self.metaspace }
        if let first = collapsed.scalars.first, first != Self.metaspace {
            collapsed.scalars.insert(Self.metaspace, at: 0)
            collapsed.alignments.insert(collapsed.alignments[0], at: 0)
        }
        return collapsed
    }

    /// The value the character map gives a multi-scalar cluster as a whole, or `nil` when no
    /// beginning of the cluster is a key. The map's keys are single scalars (the table) and the
    /// decomposed spellings of precomposed characters (any scalar of the decomposition may be
    /// written with a singleton that decomposes to it, such as U+0341 for U+0301), which map to
    /// their composition; the shortest key that begins the cluster decides, as in the map's
    /// prefix search.
    private func clusterKeyValue(_ scalars: [Unicode.Scalar]) -> [Unicode.Scalar]? {
        if let value = replacement(of: scalars[0]) { return value }
        guard scalars.count > 1 else { return nil }
        for length in 2...scalars.count {
            var prefix = String.UnicodeScalarView()
            prefix.append(contentsOf: scalars[0..<length])
            let string = String(prefix)
            // Each scalar must decompose to exactly one scalar (itself or a singleton) …
            guard string.decomposedStringWithCompatibilityMapping.unicodeScalars.count == length else { continue }
            // … and together they must compose into fewer.
            let composed = Array(string.precomposedStringWithCompatibilityMapping.unicodeScalars)
            guard composed.count < length else { continue }
            return composed
        }
        return nil
    }
}
