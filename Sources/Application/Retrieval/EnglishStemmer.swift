/// An English stemmer in the manner of Porter2 ("Snowball English"), written for this project:
/// regions R1/R2, the step 0–5 suffix rules, short-syllable tests and the usual exception words.
/// It maps inflected forms to a shared stem (`running`, `runs` → `run`; `closures` → `closur`).
public struct EnglishStemmer: Sendable {
    /// A stemmer; it holds no state.
    public init() {}

    private static let exceptions: [String: String] = [
        "skis": "ski", "skies": "sky", "dying": "die", "lying": "lie", "tying": "tie",
        "idly": "idl", "gently": "gentl", "ugly": "ugli", "early": "earli", "only": "onli", "singly": "singl",
        "sky": "sky", "news": "news", "howe": "howe", "atlas": "atlas", "cosmos": "cosmos", "bias": "bias",
        "andes": "andes",
    ]
    private static let invariantAfterStep1a: Set<String> = [
        "inning", "outing", "canning", "herring", "earring", "proceed", "exceed", "succeed",
    ]

    /// The stem of a lower-case word. Words of one or two letters are returned unchanged.
    public func stem(_ input: String) -> String {
        guard input.count > 2 else { return input }
        if let exception = Self.exceptions[input] { return exception }
        var w = Array(input)
        if w.first == "'" { w.removeFirst() }
        Self.markConsonantYs(&w)
        // The regions are found once, before any suffix is removed, as Porter2 specifies.
        let (r1, r2) = Self.regions(w)
        Self.step0(&w)
        Self.step1a(&w)
        if Self.invariantAfterStep1a.contains(String(w)) { return String(w) }
        Self.step1b(&w, r1: r1)
        Self.step1c(&w)
        Self.step2(&w, r1: r1)
        Self.step3(&w, r1: r1, r2: r2)
        Self.step4(&w, r2: r2)
        Self.step5(&w, r1: r1, r2: r2)
        return String(w).replacingOccurrences(of: "Y", with: "y")
    }

    /// Marks consonant y's (initial, or after a vowel) as Y.
    private static func markConsonantYs(_ w: inout [Character]) {
        for i in w.indices where w[i] == "y" && (i == 0 || isVowel(w[i - 1])) { w[i] = "Y" }
    }

    /// Step 0: apostrophe suffixes.
    private static func step0(_ w: inout [Character]) {
        for suffix in ["'s'", "'s", "'"] where w.hasSuffix(suffix) {
            w.removeLast(suffix.count)
            break
        }
    }

    /// Step 1a: plural s.
    private static func step1a(_ w: inout [Character]) {
        if w.hasSuffix("sses") {
            w.removeLast(2)
        } else if w.hasSuffix("ied") || w.hasSuffix("ies") {
            w.removeLast(w.count > 4 ? 2 : 1)
        } else if w.hasSuffix("us") || w.hasSuffix("ss") {
            // unchanged
        } else if w.last == "s", w.count >= 2, w.dropLast(2).contains(where: isVowel) {
            w.removeLast()
        }
    }

    /// Step 1b: eed, ed, ing (and their -ly forms), then the at/bl/iz, double-letter and short-word fixes.
    private static func step1b(_ w: inout [Character], r1: Int) {
        if let suffix = ["eedly", "eed"].first(where: { w.hasSuffix($0) }) {
            if w.count - suffix.count >= r1 {
                w.removeLast(suffix.count)
                w += ["e", "e"]
            }
        } else if let suffix = ["ingly", "edly", "ing", "ed"].first(where: { w.hasSuffix($0) }),
            w.dropLast(suffix.count).contains(where: isVowel)
        {
            w.removeLast(suffix.count)
            if w.hasSuffix("at") || w.hasSuffix("bl") || w.hasSuffix("iz") {
                w.append("e")
            } else if w.count >= 2, w[w.count - 1] == w[w.count - 2], "bdfgmnprt".contains(w[w.count - 1]) {
                w.removeLast()
            } else if isShortWord(w, r1: r1) {
                w.append("e")
            }
        }
    }

    /// Step 1c: a final y after a consonant (not the first letter) becomes i.
    private static func step1c(_ w: inout [Character]) {
        if w.count > 2, w.last == "y" || w.last == "Y", !isVowel(w[w.count - 2]) { w[w.count - 1] = "i" }
    }

    private static let step2Suffixes: [(String, String)] = [
        ("ization", "ize"), ("ational", "ate"), ("fulness", "ful"), ("ousness", "ous"), ("iveness", "ive"),
        ("tional", "tion"), ("biliti", "ble"), ("lessli", "less"), ("entli", "ent"), ("ation", "ate"),
        ("alism", "al"), ("aliti", "al"), ("ousli", "ous"), ("iviti", "ive"), ("fulli", "ful"),
        ("enci", "ence"), ("anci", "ance"), ("abli", "able"), ("izer", "ize"), ("ator", "ate"),
        ("alli", "al"), ("bli", "ble"), ("ogi", "og"), ("li", ""),
    ]

    /// Step 2: the longest listed suffix in R1 is replaced (ogi after l; li after a valid li-ending).
    private static func step2(_ w: inout [Character], r1: Int) {
        guard let (suffix, replacement) = step2Suffixes.first(where: { w.hasSuffix($0.0) }),
            w.count - suffix.count >= r1
        else { return }
        let stemEnd = w.count - suffix.count
        if suffix == "ogi" {
            if stemEnd > 0, w[stemEnd - 1] == "l" {
                w.removeLast(suffix.count)
                w += replacement
            }
        } else if suffix == "li" {
            if stemEnd > 0, "cdeghkmnrt".contains(w[stemEnd - 1]) { w.removeLast(2) }
        } else {
            w.removeLast(suffix.count)
            w += replacement
        }
    }

    private static let step3Suffixes: [(String, String)] = [
        ("ational", "ate"), ("tional", "tion"), ("alize", "al"), ("icate", "ic"), ("iciti", "ic"),
        ("ative", ""), ("ical", "ic"), ("ness", ""), ("ful", ""),
    ]

    /// Step 3: the longest listed suffix in R1 is replaced (ative only in R2).
    private static func step3(_ w: inout [Character], r1: Int, r2: Int) {
        guard let (suffix, replacement) = step3Suffixes.first(where: { w.hasSuffix($0.0) }),
            w.count - suffix.count >= r1
        else { return }
        if suffix == "ative" {
            if w.count - suffix.count >= r2 { w.removeLast(suffix.count) }
        } else {
            w.removeLast(suffix.count)
            w += replacement
        }
    }

    private static let step4Suffixes = [
        "ement", "ance", "ence", "able", "ible", "ment", "ant", "ent", "ism", "ate", "iti", "ous", "ive", "ize", "ion",
        "al", "er", "ic",
    ]

    /// Step 4: the longest listed suffix in R2 is removed (ion only after s or t).
    private static func step4(_ w: inout [Character], r2: Int) {
        guard let suffix = step4Suffixes.first(where: { w.hasSuffix($0) }), w.count - suffix.count >= r2 else { return }
        if suffix == "ion" {
            let stemEnd = w.count - 3
            if stemEnd > 0, w[stemEnd - 1] == "s" || w[stemEnd - 1] == "t" { w.removeLast(3) }
        } else {
            w.removeLast(suffix.count)
        }
    }

    /// Step 5: a final e (in R2, or in R1 after no short syllable) or the second l of a final ll in R2 is removed.
    private static func step5(_ w: inout [Character], r1: Int, r2: Int) {
        if w.last == "e" {
            let stemEnd = w.count - 1
            if stemEnd >= r2 || (stemEnd >= r1 && !endsInShortSyllable(Array(w.prefix(stemEnd)))) { w.removeLast() }
        } else if w.last == "l", w.count - 1 >= r2, w.count >= 2, w[w.count - 2] == "l" {
            w.removeLast()
        }
    }

    static func isVowel(_ c: Character) -> Bool { "aeiouy".contains(c) }

    /// R1: after the first non-vowel following a vowel (with the gener/commun/arsen exceptions);
    /// R2: the same rule applied again inside R1. Returned as start offsets.
    static func regions(_ w: [Character]) -> (Int, Int) {
        func next(after start: Int) -> Int {
            var i = start
            while i + 1 < w.count {
                if isVowel(w[i]), !isVowel(w[i + 1]) { return i + 2 }
                i += 1
            }
            return w.count
        }
        let word = String(w)
        var r1 = next(after: 0)
        for prefix in ["gener", "commun", "arsen"] where word.hasPrefix(prefix) { r1 = prefix.count }
        return (r1, next(after: r1))
    }

    static func endsInShortSyllable(_ w: [Character]) -> Bool {
        let n = w.count
        if n == 2 { return isVowel(w[0]) && !isVowel(w[1]) }
        guard n >= 3 else { return false }
        return !isVowel(w[n - 3]) && isVowel(w[n - 2]) && !isVowel(w[n - 1]) && !"wxY".contains(w[n - 1])
    }

    static func isShortWord(_ w: [Character], r1: Int) -> Bool {
        r1 >= w.count && endsInShortSyllable(w)
    }
}

extension Array where Element == Character {
    fileprivate func hasSuffix(_ suffix: String) -> Bool {
        let s = Array(suffix)
        return count >= s.count && Array(self[(count - s.count)...]) == s
    }

    fileprivate static func += (lhs: inout [Character], rhs: String) { lhs.append(contentsOf: rhs) }
}
