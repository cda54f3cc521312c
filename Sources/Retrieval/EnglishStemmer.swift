/// An English stemmer in the manner of Porter2 ("Snowball English"), written for this project:
/// regions R1/R2, the step 0–5 suffix rules, short-syllable tests and the usual exception words.
/// It maps inflected forms to a shared stem (`running`, `runs` → `run`; `closures` → `closur`).
public struct EnglishStemmer: Sendable {
    /// A stemmer; it holds no state.
    public init() {}

    private static let exceptions: [String: String] = [
        "skis": "ski", "skies": "sky", "dying": "die", "lying": "lie", "tying": "tie",
        "idly": "idl", "gently": "gentl", "ugly": "ugli", "early": "earli", "only": "onli", "singly": "singl",
        "sky": "sky", "news": "news", "howe": "howe", "atlas": "atlas", "cosmos": "cosmos", "bias": "bias", "andes": "andes",
    ]
    private static let invariantAfterStep1a: Set<String> = ["inning", "outing", "canning", "herring", "earring", "proceed", "exceed", "succeed"]

    /// The stem of a lower-case word. Words of one or two letters are returned unchanged.
    public func stem(_ input: String) -> String {
        guard input.count > 2 else { return input }
        if let exception = Self.exceptions[input] { return exception }
        var w = Array(input)
        if w.first == "'" { w.removeFirst() }
        // Mark consonant y's as Y.
        for i in w.indices where w[i] == "y" && (i == 0 || Self.isVowel(w[i - 1])) { w[i] = "Y" }
        let (r1, r2) = Self.regions(w)

        // Step 0: apostrophe suffixes.
        for suffix in ["'s'", "'s", "'"] where w.hasSuffix(suffix) { w.removeLast(suffix.count); break }

        // Step 1a.
        if w.hasSuffix("sses") {
            w.removeLast(2)
        } else if w.hasSuffix("ied") || w.hasSuffix("ies") {
            w.removeLast(w.count > 4 ? 2 : 1)
        } else if w.hasSuffix("us") || w.hasSuffix("ss") {
            // unchanged
        } else if w.last == "s", w.count >= 2, w.dropLast(2).contains(where: Self.isVowel) {
            w.removeLast()
        }
        if Self.invariantAfterStep1a.contains(String(w)) { return String(w) }

        // Step 1b.
        if let suffix = ["eedly", "eed"].first(where: { w.hasSuffix($0) }) {
            if w.count - suffix.count >= r1 { w.removeLast(suffix.count); w += ["e", "e"] }
        } else if let suffix = ["ingly", "edly", "ing", "ed"].first(where: { w.hasSuffix($0) }),
                  w.dropLast(suffix.count).contains(where: Self.isVowel) {
            w.removeLast(suffix.count)
            if w.hasSuffix("at") || w.hasSuffix("bl") || w.hasSuffix("iz") {
                w.append("e")
            } else if w.count >= 2, w[w.count - 1] == w[w.count - 2], "bdfgmnprt".contains(w[w.count - 1]) {
                w.removeLast()
            } else if Self.isShortWord(w, r1: r1) {
                w.append("e")
            }
        }

        // Step 1c.
        if w.count > 2, w.last == "y" || w.last == "Y", !Self.isVowel(w[w.count - 2]) { w[w.count - 1] = "i" }

        // Step 2.
        let step2: [(String, String)] = [
            ("ization", "ize"), ("ational", "ate"), ("fulness", "ful"), ("ousness", "ous"), ("iveness", "ive"),
            ("tional", "tion"), ("biliti", "ble"), ("lessli", "less"), ("entli", "ent"), ("ation", "ate"),
            ("alism", "al"), ("aliti", "al"), ("ousli", "ous"), ("iviti", "ive"), ("fulli", "ful"),
            ("enci", "ence"), ("anci", "ance"), ("abli", "able"), ("izer", "ize"), ("ator", "ate"),
            ("alli", "al"), ("bli", "ble"), ("ogi", "og"), ("li", ""),
        ]
        if let (suffix, replacement) = step2.first(where: { w.hasSuffix($0.0) }), w.count - suffix.count >= r1 {
            let stemEnd = w.count - suffix.count
            if suffix == "ogi" {
                if stemEnd > 0, w[stemEnd - 1] == "l" { w.removeLast(suffix.count); w += replacement }
            } else if suffix == "li" {
                if stemEnd > 0, "cdeghkmnrt".contains(w[stemEnd - 1]) { w.removeLast(2) }
            } else {
                w.removeLast(suffix.count)
                w += replacement
            }
        }

        // Step 3.
        let step3: [(String, String)] = [
            ("ational", "ate"), ("tional", "tion"), ("alize", "al"), ("icate", "ic"), ("iciti", "ic"),
            ("ative", ""), ("ical", "ic"), ("ness", ""), ("ful", ""),
        ]
        if let (suffix, replacement) = step3.first(where: { w.hasSuffix($0.0) }), w.count - suffix.count >= r1 {
            if suffix == "ative" {
                if w.count - suffix.count >= r2 { w.removeLast(suffix.count) }
            } else {
                w.removeLast(suffix.count)
                w += replacement
            }
        }

        // Step 4.
        let step4 = ["ement", "ance", "ence", "able", "ible", "ment", "ant", "ent", "ism", "ate", "iti", "ous", "ive", "ize", "ion", "al", "er", "ic"]
        if let suffix = step4.first(where: { w.hasSuffix($0) }), w.count - suffix.count >= r2 {
            if suffix == "ion" {
                let stemEnd = w.count - 3
                if stemEnd > 0, w[stemEnd - 1] == "s" || w[stemEnd - 1] == "t" { w.removeLast(3) }
            } else {
                w.removeLast(suffix.count)
            }
        }

        // Step 5.
        if w.last == "e" {
            let stemEnd = w.count - 1
            if stemEnd >= r2 || (stemEnd >= r1 && !Self.endsInShortSyllable(Array(w.prefix(stemEnd)))) { w.removeLast() }
        } else if w.last == "l", w.count - 1 >= r2, w.count >= 2, w[w.count - 2] == "l" {
            w.removeLast()
        }
        return String(w).replacingOccurrences(of: "Y", with: "y")
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

private extension Array where Element == Character {
    func hasSuffix(_ suffix: String) -> Bool {
        let s = Array(suffix)
        return count >= s.count && Array(self[(count - s.count)...]) == s
    }

    static func += (lhs: inout [Character], rhs: String) { lhs.append(contentsOf: rhs) }
}
