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
            guard Unicode.Scalar(key) != nil else {
                throw SentencePieceError.invalidNormalization(reason: "key \(key) is not a Unicode scalar")
            }
            var scalars = [Unicode.Scalar]()
            for v in value {
                guard let s = Unicode.Scalar(v) else {
                    throw SentencePieceError.invalidNormalization(
                        reason: "replacement \(v) of \(key) is not a Unicode scalar")
                }
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
        let mapped = characterMap(text, byteOffset: byteOffset)
        let aligned = Self.aligned(mapped, byteOffset: byteOffset)
        return Self.addingMetaspace(to: Self.collapsingSpaceRuns(in: aligned))
    }

    /// Step 1 as `tokenizers` records it, before alignment: the original scalars' byte ranges, and
    /// the transformations `(scalar, change)` where change 0 replaces the next original scalar,
    /// +1 inserts, and −k also drops the k original scalars after it.
    private struct Transformations {
        var ranges: [Range<Int>] = []
        var steps: [(scalar: Unicode.Scalar, change: Int)] = []

        /// Records `new` in place of the next `oldCount` original scalars.
        mutating func replace(oldCount: Int, with new: [Unicode.Scalar]) {
            for s in new { steps.append((s, 0)) }
            let diff = new.count - oldCount
            if diff > 0 {
                for k in (steps.count - diff)..<steps.count { steps[k].change = 1 }
            } else if diff < 0, !steps.isEmpty {
                steps[steps.count - 1].change += diff
            }
        }
    }

    /// Step 1: the precompiled character map, applied per grapheme cluster (a short cluster that a
    /// key begins as a whole, any other scalar by scalar).
    private func characterMap(_ text: Substring, byteOffset: Int) -> Transformations {
        var result = Transformations()
        result.steps.reserveCapacity(text.utf8.count)
        result.ranges.reserveCapacity(text.utf8.count)
        var offset = byteOffset
        // Clusters repeat (vocalized Arabic, decomposed Latin): look each one up once per call.
        var clusterValues = [[UInt32]: [Unicode.Scalar]?]()
        for character in text {
            let scalars = character.unicodeScalars
            let start = offset
            for s in scalars {
                let length = UTF8.width(s)
                result.ranges.append(offset..<(offset + length))
                offset += length
            }
            if scalars.count > 1, offset - start < 6 {
                let key = scalars.map(\.value)
                let value: [Unicode.Scalar]?
                if let cached = clusterValues[key] {
                    value = cached
                } else {
                    value = clusterKeyValue(Array(scalars))
                    clusterValues[key] = value
                }
                if let value {
                    result.replace(oldCount: scalars.count, with: value)
                    continue
                }
            }
            for s in scalars {
                if let value = replacement(of: s) {
                    result.replace(oldCount: 1, with: value)
                } else {
                    result.steps.append((s, 0))
                }
            }
        }
        return result
    }

    /// Applies the transformations the way `NormalizedString.transform` aligns them.
    private static func aligned(_ mapped: Transformations, byteOffset: Int) -> Normalized {
        let ranges = mapped.ranges
        var out = Normalized()
        out.scalars.reserveCapacity(mapped.steps.count)
        out.alignments.reserveCapacity(mapped.steps.count)
        var cursor = 0
        let empty = byteOffset..<byteOffset
        for (scalar, change) in mapped.steps {
            let alignment: Range<Int>
            if change > 0 {
                alignment = cursor > 0 ? ranges[cursor - 1] : empty
            } else {
                alignment =
                    cursor < ranges.count
                    ? ranges[cursor] : (ranges.last.map { $0.upperBound..<$0.upperBound } ?? empty)
                cursor += 1
            }
            if change < 0 { cursor += -change }
            out.scalars.append(scalar)
            out.alignments.append(alignment)
        }
        return out
    }

    /// Step 2: a run of spaces becomes one space, aligned to the run's last space.
    private static func collapsingSpaceRuns(in text: Normalized) -> Normalized {
        var collapsed = Normalized()
        collapsed.scalars.reserveCapacity(text.scalars.count + 1)
        collapsed.alignments.reserveCapacity(text.scalars.count + 1)
        var i = 0
        while i < text.scalars.count {
            if text.scalars[i] == " " {
                var j = i + 1
                while j < text.scalars.count, text.scalars[j] == " " { j += 1 }
                collapsed.scalars.append(" ")
                collapsed.alignments.append(text.alignments[j - 1])
                i = j
            } else {
                collapsed.scalars.append(text.scalars[i])
                collapsed.alignments.append(text.alignments[i])
                i += 1
            }
        }
        return collapsed
    }

    /// Step 3: metaspace, with the leading marker aligned to the first scalar.
    private static func addingMetaspace(to text: Normalized) -> Normalized {
        var result = text
        for k in result.scalars.indices where result.scalars[k] == " " { result.scalars[k] = metaspace }
        if let first = result.scalars.first, first != metaspace {
            result.scalars.insert(metaspace, at: 0)
            result.alignments.insert(result.alignments[0], at: 0)
        }
        return result
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
