import Foundation

/// One character of normalized text and the original scalar it came from.
struct AlignedScalar {
    var scalar: Unicode.Scalar
    /// Index into the original text's scalar array.
    var origin: Int
}

/// Hugging Face's `BertNormalizer`, keeping, for every output scalar, the original scalar it came from.
///
/// Steps, in Hugging Face's order: clean the text (drop NUL, U+FFFD and control/format/private-use
/// characters; turn white space into a plain space), put spaces around CJK ideographs, strip
/// accents (canonical decomposition, then drop non-spacing marks), lower-case each scalar on its
/// own (so a final capital sigma becomes σ, never ς).
public struct BertNormalizer: Sendable {
    /// Drop control characters and map white space to spaces.
    public var cleanText: Bool
    /// Isolate CJK ideographs as words of their own.
    public var handleChineseCharacters: Bool
    /// Decompose and drop combining marks. `nil` means: whenever `lowercase` is on.
    public var stripAccents: Bool?
    /// Lower-case every scalar.
    public var lowercase: Bool

    /// A normalizer with Hugging Face's defaults unless told otherwise.
    public init(
        cleanText: Bool = true, handleChineseCharacters: Bool = true, stripAccents: Bool? = nil, lowercase: Bool = true
    ) {
        self.cleanText = cleanText
        self.handleChineseCharacters = handleChineseCharacters
        self.stripAccents = stripAccents
        self.lowercase = lowercase
    }

    func normalize(_ input: [AlignedScalar]) -> [AlignedScalar] {
        var output = [AlignedScalar]()
        output.reserveCapacity(input.count + 8)
        let strip = stripAccents ?? lowercase
        for item in input {
            var scalar = item.scalar
            if cleanText {
                if scalar.value == 0 || scalar.value == 0xFFFD || Self.isControl(scalar) { continue }
                if Self.isWhitespace(scalar) { scalar = " " }
            }
            if handleChineseCharacters, Self.isChineseCharacter(scalar) {
                output.append(AlignedScalar(scalar: " ", origin: item.origin))
                output.append(AlignedScalar(scalar: scalar, origin: item.origin))
                output.append(AlignedScalar(scalar: " ", origin: item.origin))
                continue
            }
            // ASCII needs neither decomposition nor a lower-case table.
            if scalar.isASCII {
                var value = scalar.value
                if lowercase, value >= 0x41, value <= 0x5A { value += 0x20 }
                output.append(AlignedScalar(scalar: Unicode.Scalar(UInt8(value)), origin: item.origin))
                continue
            }
            let decomposed: [Unicode.Scalar] = strip ? Self.canonicalDecomposition(scalar) : [scalar]
            for part in decomposed {
                if strip, part.properties.generalCategory == .nonspacingMark { continue }
                if lowercase {
                    for lower in part.properties.lowercaseMapping.unicodeScalars {
                        output.append(AlignedScalar(scalar: lower, origin: item.origin))
                    }
                } else {
                    output.append(AlignedScalar(scalar: part, origin: item.origin))
                }
            }
        }
        return output
    }

    /// White space as BERT sees it: tab, newline, carriage return, and the Unicode White_Space property.
    static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case " ", "\t", "\n", "\r": return true
        default: return scalar.properties.isWhitespace
        }
    }

    /// Control characters as BERT sees them: categories Cc, Cf, Co and Cs, except tab, newline and
    /// carriage return (which count as white space). Unassigned scalars (Cn) are kept.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "\t", "\n", "\r": return false
        default:
            switch scalar.properties.generalCategory {
            case .control, .format, .privateUse, .surrogate: return true
            default: return false
            }
        }
    }

    /// The CJK Unified Ideographs blocks BERT isolates (not Hangul, not kana).
    static func isChineseCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x4E00...0x9FFF, 0x3400...0x4DBF, 0x20000...0x2A6DF, 0x2A700...0x2B73F,
            0x2B740...0x2B81F, 0x2B820...0x2CEAF, 0xF900...0xFAFF, 0x2F800...0x2FA1F:
            return true
        default:
            return false
        }
    }

    /// Punctuation as BERT sees it: every ASCII punctuation or symbol character, and the Unicode
    /// punctuation categories (Pc, Pd, Ps, Pe, Pi, Pf, Po).
    static func isPunctuation(_ scalar: Unicode.Scalar) -> Bool {
        let v = scalar.value
        if (33...47).contains(v) || (58...64).contains(v) || (91...96).contains(v) || (123...126).contains(v) {
            return true
        }
        switch scalar.properties.generalCategory {
        case .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation,
            .initialPunctuation, .finalPunctuation, .otherPunctuation:
            return true
        default:
            return false
        }
    }

    /// The canonical decomposition (NFD) of one scalar.
    static func canonicalDecomposition(_ scalar: Unicode.Scalar) -> [Unicode.Scalar] {
        // Most non-ASCII scalars do not decompose; asking Foundation is the slow path.
        if scalar.properties.canonicalCombiningClass == .notReordered,
            scalar.value < 0xC0
        {
            return [scalar]
        }
        let s = String(String.UnicodeScalarView([scalar]))
        return Array(s.decomposedStringWithCanonicalMapping.unicodeScalars)
    }
}
