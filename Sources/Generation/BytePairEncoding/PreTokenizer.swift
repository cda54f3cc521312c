/// How byte-level BPE splits text into pieces before merging, chosen by the GGUF key
/// `tokenizer.ggml.pre`. Each split is the regular expression of the model's original tokenizer,
/// written out as a matcher over Unicode scalars (Swift's `Regex` is far slower and its `\s` and
/// `\p{…}` follow another Unicode table than Hugging Face's).
///
/// | `tokenizer.ggml.pre` | expression |
/// |---|---|
/// | `gpt2` | `'s\|'t\|'re\|'ve\|'m\|'ll\|'d\| ?\p{L}+\| ?\p{N}+\| ?[^\s\p{L}\p{N}]+\|\s+(?!\S)\|\s+` |
/// | `smollm` | every `\p{N}` on its own first, then `gpt2` inside each piece |
/// | `llama-bpe` | `(?i:'s\|'t\|'re\|'ve\|'m\|'ll\|'d)\|[^\r\n\p{L}\p{N}]?\p{L}+\|\p{N}{1,3}\| ?[^\s\p{L}\p{N}]+[\r\n]*\|\s*[\r\n]+\|\s+(?!\S)\|\s+` |
/// | `qwen2` | as `llama-bpe`, with `\p{N}` one at a time instead of `\p{N}{1,3}` |
///
/// Alternatives are tried in order at each position and the first that matches wins, as in a
/// backtracking regular-expression engine; every scalar belongs to exactly one piece.
package enum BytePairPreTokenizer: String, Sendable, CaseIterable {
    /// GPT-2's split (`tokenizer.ggml.pre = gpt2`; also the split of a file that names none).
    case gpt2
    /// SmolLM's: digits one by one, then GPT-2's split.
    case smollm
    /// Llama 3's split (`llama-bpe`): contractions in any case, numbers in runs of up to three digits.
    case llamaBPE = "llama-bpe"
    /// Qwen2's split: Llama 3's with single digits.
    case qwen2

    /// The pieces of `scalars` as half-open ranges of scalar positions, in order, covering every scalar.
    /// - Complexity: O(n) in the number of scalars.
    package func pieces(of scalars: [Unicode.Scalar]) -> [Range<Int>] {
        let classes = scalars.map(ScalarClass.init)
        var pieces: [Range<Int>] = []
        switch self {
        case .gpt2:
            Self.splitGPT2(classes, 0..<classes.count, into: &pieces)
        case .smollm:
            // Each number scalar alone; GPT-2's split over the runs between them.
            var start = 0
            for i in classes.indices where classes[i].kind == .number {
                Self.splitGPT2(classes, start..<i, into: &pieces)
                pieces.append(i..<(i + 1))
                start = i + 1
            }
            Self.splitGPT2(classes, start..<classes.count, into: &pieces)
        case .llamaBPE:
            Self.splitLlama3(classes, maximumDigits: 3, into: &pieces)
        case .qwen2:
            Self.splitLlama3(classes, maximumDigits: 1, into: &pieces)
        }
        return pieces
    }

    // MARK: - The matchers

    /// GPT-2's expression over `range` of `c`.
    private static func splitGPT2(_ c: [ScalarClass], _ range: Range<Int>, into pieces: inout [Range<Int>]) {
        let end = range.upperBound
        var i = range.lowerBound
        while i < end {
            let next =
                contraction(c, at: i, end: end, caseInsensitive: false)
                ?? run(c, at: i, end: end, optionalSpace: true) { $0 == .letter }
                ?? run(c, at: i, end: end, optionalSpace: true) { $0 == .number }
                ?? run(c, at: i, end: end, optionalSpace: true) { $0 == .other }
                ?? whitespaceNotBeforeNonSpace(c, at: i, end: end)
                ?? whitespace(c, at: i, end: end)
                ?? (i + 1)  // unreachable: every scalar is a letter, number, space or other
            pieces.append(i..<next)
            i = next
        }
    }

    /// Llama 3's (and, with one digit, Qwen2's) expression over all of `c`.
    private static func splitLlama3(_ c: [ScalarClass], maximumDigits: Int, into pieces: inout [Range<Int>]) {
        let end = c.count
        var i = 0
        while i < end {
            let next =
                contraction(c, at: i, end: end, caseInsensitive: true)
                ?? letterRunWithOneLeader(c, at: i, end: end)
                ?? digits(c, at: i, end: end, maximum: maximumDigits)
                ?? otherRunThenNewlines(c, at: i, end: end)
                ?? whitespaceThroughLastNewline(c, at: i, end: end)
                ?? whitespaceNotBeforeNonSpace(c, at: i, end: end)
                ?? whitespace(c, at: i, end: end)
                ?? (i + 1)
            pieces.append(i..<next)
            i = next
        }
    }

    /// `'s|'t|'re|'ve|'m|'ll|'d` (ASCII apostrophe; letters in either case when `caseInsensitive`).
    private static func contraction(_ c: [ScalarClass], at i: Int, end: Int, caseInsensitive: Bool) -> Int? {
        guard c[i].scalar == "'", i + 1 < end else { return nil }
        func letter(_ k: Int) -> Character? {
            guard k < end, c[k].scalar.isASCII else { return nil }
            let character = Character(c[k].scalar)
            return caseInsensitive ? Character(character.lowercased()) : character
        }
        switch letter(i + 1) {
        case "s", "t", "m", "d": return i + 2
        case "r": return letter(i + 2) == "e" ? i + 3 : nil
        case "v": return letter(i + 2) == "e" ? i + 3 : nil
        case "l": return letter(i + 2) == "l" ? i + 3 : nil
        default: return nil
        }
    }

    /// ` ?X+` for a class `X`: an optional U+0020, then one or more scalars of the class.
    private static func run(
        _ c: [ScalarClass], at i: Int, end: Int, optionalSpace: Bool,
        _ member: (ScalarClass.Kind) -> Bool
    ) -> Int? {
        var k = i
        if optionalSpace, c[k].scalar == " ", k + 1 < end, member(c[k + 1].kind) { k += 1 }
        guard member(c[k].kind) else { return nil }
        while k < end, member(c[k].kind) { k += 1 }
        return k
    }

    /// `[^\r\n\p{L}\p{N}]?\p{L}+`.
    private static func letterRunWithOneLeader(_ c: [ScalarClass], at i: Int, end: Int) -> Int? {
        var k = i
        if c[k].kind != .letter, c[k].kind != .number, !c[k].isNewline, k + 1 < end, c[k + 1].kind == .letter { k += 1 }
        guard c[k].kind == .letter else { return nil }
        while k < end, c[k].kind == .letter { k += 1 }
        return k
    }

    /// `\p{N}{1,maximum}`.
    private static func digits(_ c: [ScalarClass], at i: Int, end: Int, maximum: Int) -> Int? {
        guard c[i].kind == .number else { return nil }
        var k = i
        while k < end, k - i < maximum, c[k].kind == .number { k += 1 }
        return k
    }

    /// ` ?[^\s\p{L}\p{N}]+[\r\n]*`.
    private static func otherRunThenNewlines(_ c: [ScalarClass], at i: Int, end: Int) -> Int? {
        guard var k = run(c, at: i, end: end, optionalSpace: true, { $0 == .other }) else { return nil }
        while k < end, c[k].isNewline { k += 1 }
        return k
    }

    /// `\s*[\r\n]+`: the whitespace run from `i`, up to and including its last `\r` or `\n`.
    private static func whitespaceThroughLastNewline(_ c: [ScalarClass], at i: Int, end: Int) -> Int? {
        var k = i
        var last: Int?
        while k < end, c[k].kind == .space {
            if c[k].isNewline { last = k }
            k += 1
        }
        return last.map { $0 + 1 }
    }

    /// `\s+(?!\S)`: the whitespace run from `i`, less its last scalar when a non-space follows it.
    private static func whitespaceNotBeforeNonSpace(_ c: [ScalarClass], at i: Int, end: Int) -> Int? {
        var k = i
        while k < end, c[k].kind == .space { k += 1 }
        if k == end { return k > i ? k : nil }
        return k - 1 > i ? k - 1 : nil
    }

    /// `\s+`.
    private static func whitespace(_ c: [ScalarClass], at i: Int, end: Int) -> Int? {
        var k = i
        while k < end, c[k].kind == .space { k += 1 }
        return k > i ? k : nil
    }
}

/// A scalar and the one class of `\p{L}`, `\p{N}`, `\s` or anything else it falls in.
struct ScalarClass {
    enum Kind: UInt8 { case letter, number, space, other }
    let scalar: Unicode.Scalar
    let kind: Kind

    init(_ scalar: Unicode.Scalar) {
        self.scalar = scalar
        if scalar.isASCII {
            // The common case without a property look-up.
            switch scalar.value {
            case 0x41...0x5A, 0x61...0x7A: kind = .letter
            case 0x30...0x39: kind = .number
            case 0x09...0x0D, 0x20: kind = .space
            default: kind = .other
            }
            return
        }
        let properties = scalar.properties
        switch properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter: kind = .letter
        case .decimalNumber, .letterNumber, .otherNumber: kind = .number
        default: kind = properties.isWhitespace ? .space : .other
        }
    }

    var isNewline: Bool { scalar == "\n" || scalar == "\r" }
}
