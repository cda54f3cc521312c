/// A regular expression compiled for guided decoding: an automaton over Unicode scalars (built
/// nondeterministic, then made deterministic over classes of scalars), read one scalar at a time, that can say at any point whether some continuation still
/// leads to a match — which is what keeps every token the decoder allows on a path to a match.
///
/// The subset (whole-string match; anything else is `PatternError`):
/// - literals, `.` (any scalar but the line terminators `\n`, `\r`, U+2028, U+2029, as in ECMAScript), `\d \D \w \W \s \S` (ASCII classes),
///   escapes `\n \t \r \f \v \0 \xHH \uHHHH \u{H…}` and `\` before any punctuation;
/// - classes `[…]` and `[^…]` with ranges and the escapes above;
/// - groups `(…)`, `(?:…)`, `(?<name>…)`; alternation `|`; quantifiers `* + ? {n} {n,} {n,m}`,
///   lazy or not (the same strings match either way);
/// - `^` at the start and `$` at the end (the match is whole anyway).
/// Back-references, look-around, `\b`, flags and anchors elsewhere are refused.
struct GuidedPattern: Sendable {
    /// Scalar ranges, sorted and disjoint.
    typealias Ranges = [ClosedRange<UInt32>]

    struct Edge: Sendable {
        let ranges: Ranges
        let target: Int32
    }
    // The nondeterministic automaton, while building.
    private var edges: [[Edge]] = []
    private var epsilons: [[Int32]] = []
    private var accepting: Int32 = 0
    /// Per state: whether an accepting state can be reached from it.
    private var live: [Bool] = []

    // The deterministic automaton it becomes: scalars fall into classes (the ranges between every
    // edge's bounds), and `table[state * classCount + class]` is the next state, or −1 when no
    // match is possible any more. Every state can still reach a match.
    /// Class `c` starts at `classStarts[c]`.
    private var classStarts: [UInt32] = []
    private var table: [Int32] = []
    private var matching: [Bool] = []
    /// The state before any scalar.
    let start: Int32 = 0

    /// The source text.
    let source: String

    /// The most states a pattern may compile to (a bound on `{n,m}` expansion), and the most
    /// deterministic states.
    static let maximumStates = 20_000
    static let maximumDeterministicStates = 4_096
    /// The most steps the subset construction may take (an edge or ε-edge followed), so that a
    /// hostile pattern of few states (`(.+){1000}`: a thousand overlapping loops, each deterministic
    /// state a set of hundreds) is refused in well under a second instead of compiling for minutes.
    static let maximumCompileWork = 1 << 22

    init(_ source: String) throws(PatternError) {
        self.source = source
        var parser = Parser(scalars: Array(source.unicodeScalars), pattern: source)
        let syntax = try parser.parse()
        let begin = newState()
        accepting = newState()
        try build(syntax, from: begin, to: accepting)
        computeLiveness()
        try determinize(from: begin)
        // Only the deterministic automaton is kept.
        edges = []
        epsilons = []
        live = []
    }

    // MARK: - Running

    private var classCount: Int { classStarts.count }

    /// The class of `scalar`.
    private func classOf(_ scalar: UInt32) -> Int {
        var low = 0
        var high = classStarts.count - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if classStarts[mid] <= scalar { low = mid } else { high = mid - 1 }
        }
        return low
    }

    /// The state after reading `scalar` in `state`, or −1 when no match is possible any more.
    func advance(_ state: Int32, _ scalar: UInt32) -> Int32 {
        table[Int(state) * classCount + classOf(scalar)]
    }

    /// Whether some scalar in `low … high` can be read in `state` (and still lead to a match).
    func accepts(_ state: Int32, anyOf low: UInt32, _ high: UInt32) -> Bool {
        let row = Int(state) * classCount
        for c in classOf(low)...classOf(high) where table[row + c] >= 0 { return true }
        return false
    }

    /// Whether the scalars read so far match.
    func isMatch(_ state: Int32) -> Bool { matching[Int(state)] }

    /// Whether the whole of `text` matches (the reference the automaton is tested against).
    func matches(_ text: String) -> Bool {
        var state = start
        for scalar in text.unicodeScalars {
            state = advance(state, scalar.value)
            if state < 0 { return false }
        }
        return isMatch(state)
    }

    // MARK: - Determinizing (subset construction over scalar classes)

    private mutating func determinize(from begin: Int32) throws(PatternError) {
        var bounds: Set<UInt32> = [0]
        for list in edges {
            for edge in list {
                for range in edge.ranges {
                    bounds.insert(range.lowerBound)
                    if range.upperBound < 0x10FFFF { bounds.insert(range.upperBound + 1) }
                }
            }
        }
        classStarts = bounds.sorted()
        var work = 0
        func spend(_ steps: Int) throws(PatternError) {
            work += steps
            guard work <= Self.maximumCompileWork else {
                throw PatternError(
                    pattern: source,
                    message: "it is too complex to compile (more than \(Self.maximumCompileWork) steps)")
            }
        }
        let initial = closure([begin], work: &work)
        guard !initial.isEmpty else { throw PatternError(pattern: source, message: "it matches no string") }
        var ids: [[Int32]: Int32] = [initial: 0]
        var sets = [initial]
        var index = 0
        while index < sets.count {
            let set = sets[index]
            index += 1
            var row = [Int32](repeating: -1, count: classStarts.count)
            for c in classStarts.indices {
                let scalar = classStarts[c]
                var targets: [Int32] = []
                var examined = 0
                for state in set {
                    let list = edges[Int(state)]
                    examined += 1 + list.count
                    for edge in list where Self.contains(edge.ranges, scalar) {
                        targets.append(edge.target)
                    }
                }
                let next = closure(targets, work: &work)
                try spend(examined)
                guard !next.isEmpty else { continue }
                if let id = ids[next] {
                    row[c] = id
                } else {
                    guard sets.count < Self.maximumDeterministicStates else {
                        throw PatternError(
                            pattern: source, message: "it needs more than \(Self.maximumDeterministicStates) states")
                    }
                    ids[next] = Int32(sets.count)
                    row[c] = Int32(sets.count)
                    sets.append(next)
                }
            }
            table.append(contentsOf: row)
            matching.append(set.contains(accepting))
        }
    }

    private static func contains(_ ranges: Ranges, _ x: UInt32) -> Bool {
        for range in ranges {
            if x < range.lowerBound { return false }
            if x <= range.upperBound { return true }
        }
        return false
    }

    /// The live states reachable from `states` by ε-edges, sorted; `work` counts the states visited.
    private func closure(_ states: [Int32], work: inout Int) -> [Int32] {
        var seen = Set<Int32>()
        var stack = states
        while let state = stack.popLast() {
            work += 1
            guard seen.insert(state).inserted else { continue }
            stack.append(contentsOf: epsilons[Int(state)])
        }
        return seen.filter { live[Int($0)] }.sorted()
    }

    // MARK: - Building (Thompson's construction)

    private mutating func newState() -> Int32 {
        edges.append([])
        epsilons.append([])
        return Int32(edges.count - 1)
    }

    private mutating func build(_ node: Syntax, from a: Int32, to b: Int32) throws(PatternError) {
        guard edges.count < Self.maximumStates else {
            throw PatternError(pattern: source, message: "it needs more than \(Self.maximumStates) states")
        }
        switch node {
        case .empty:
            epsilons[Int(a)].append(b)
        case .set(let ranges):
            // A JSON string never holds a lone surrogate: such a pattern can only match without it.
            edges[Int(a)].append(Edge(ranges: Ranges.subtracting(ranges, [0xD800...0xDFFF]), target: b))
        case .sequence(let items):
            var from = a
            for (i, item) in items.enumerated() {
                let to = i == items.count - 1 ? b : newState()
                try build(item, from: from, to: to)
                from = to
            }
            if items.isEmpty { epsilons[Int(a)].append(b) }
        case .alternation(let choices):
            for choice in choices { try build(choice, from: a, to: b) }
        case .repeated(let item, let low, let high):
            var from = a
            for _ in 0..<low {
                let to = newState()
                try build(item, from: from, to: to)
                from = to
            }
            if let high {
                for _ in low..<high {
                    let to = newState()
                    epsilons[Int(from)].append(b)
                    try build(item, from: from, to: to)
                    from = to
                }
                epsilons[Int(from)].append(b)
            } else {
                // A loop: from → item → from, and out.
                let loop = newState()
                epsilons[Int(from)].append(loop)
                let back = newState()
                try build(item, from: loop, to: back)
                epsilons[Int(back)].append(loop)
                epsilons[Int(loop)].append(b)
            }
        }
    }

    private mutating func computeLiveness() {
        // Reverse reachability from the accepting state.
        var reverse = [[Int32]](repeating: [], count: edges.count)
        for state in edges.indices {
            for edge in edges[state] where !edge.ranges.isEmpty { reverse[Int(edge.target)].append(Int32(state)) }
            for target in epsilons[state] { reverse[Int(target)].append(Int32(state)) }
        }
        live = [Bool](repeating: false, count: edges.count)
        var stack = [accepting]
        while let state = stack.popLast() {
            guard !live[Int(state)] else { continue }
            live[Int(state)] = true
            stack.append(contentsOf: reverse[Int(state)])
        }
    }

    // MARK: - Parsing

    indirect enum Syntax {
        case empty
        case set(Ranges)
        case sequence([Syntax])
        case alternation([Syntax])
        case repeated(Syntax, Int, Int?)
    }

    /// The most a counted repetition may ask for.
    static let maximumCount = 1000

    private struct Parser {
        let scalars: [Unicode.Scalar]
        let pattern: String
        var i = 0

        func fail(_ message: String) -> PatternError { PatternError(pattern: pattern, message: message) }

        mutating func parse() throws(PatternError) -> Syntax {
            if i < scalars.count, scalars[i] == "^" { i += 1 }
            let syntax = try alternation()
            guard i == scalars.count else { throw fail("unexpected \"\(scalars[i])\" at \(i)") }
            return syntax
        }

        mutating func alternation() throws(PatternError) -> Syntax {
            var choices = [try sequence()]
            while i < scalars.count, scalars[i] == "|" {
                i += 1
                choices.append(try sequence())
            }
            return choices.count == 1 ? choices[0] : .alternation(choices)
        }

        mutating func sequence() throws(PatternError) -> Syntax {
            var items: [Syntax] = []
            while i < scalars.count, scalars[i] != "|", scalars[i] != ")" {
                if scalars[i] == "$" {
                    guard i == scalars.count - 1 else { throw fail("$ is only supported at the end") }
                    i += 1
                    break
                }
                var atom = try self.atom()
                atom = try quantified(atom)
                items.append(atom)
            }
            return items.count == 1 ? items[0] : .sequence(items)
        }

        mutating func quantified(_ atom: Syntax) throws(PatternError) -> Syntax {
            var atom = atom
            while i < scalars.count {
                let c = scalars[i]
                var low = 0
                var high: Int? = nil
                switch c {
                case "*": i += 1
                case "+":
                    low = 1
                    i += 1
                case "?":
                    high = 1
                    i += 1
                case "{":
                    guard let (l, h) = try counts() else { return atom }
                    low = l
                    high = h
                default: return atom
                }
                if i < scalars.count, scalars[i] == "?" { i += 1 }  // lazy: the same strings
                if i < scalars.count, scalars[i] == "+" { throw fail("possessive quantifiers are not supported") }
                atom = .repeated(atom, low, high)
            }
            return atom
        }

        /// `{n}`, `{n,}`, `{n,m}` at `i`, or nil (and `i` unchanged) when `{` is a literal there.
        mutating func counts() throws(PatternError) -> (Int, Int?)? {
            var j = i + 1
            func number() -> Int? {
                var value = 0
                var digits = 0
                while j < scalars.count,
                    let d = scalars[j].properties.numericType == .decimal ? Int(String(scalars[j])) : nil
                {
                    value = min(value * 10 + d, Int(Int32.max))
                    digits += 1
                    j += 1
                }
                return digits > 0 ? value : nil
            }
            guard let low = number() else { return nil }
            var high: Int? = low
            if j < scalars.count, scalars[j] == "," {
                j += 1
                high = number()
            }
            guard j < scalars.count, scalars[j] == "}" else { return nil }
            i = j + 1
            if let high, high < low { throw fail("{\(low),\(high)}: the maximum is below the minimum") }
            if max(low, high ?? 0) > GuidedPattern.maximumCount {
                throw fail("counts above \(GuidedPattern.maximumCount) are not supported")
            }
            return (low, high)
        }

        mutating func atom() throws(PatternError) -> Syntax {
            let c = scalars[i]
            i += 1
            switch c {
            case "(":
                if i < scalars.count, scalars[i] == "?" {
                    if i + 1 < scalars.count, scalars[i + 1] == ":" {
                        i += 2
                    } else if i + 1 < scalars.count, scalars[i + 1] == "<", i + 2 < scalars.count,
                        scalars[i + 2] != "=", scalars[i + 2] != "!"
                    {
                        while i < scalars.count, scalars[i] != ">" { i += 1 }
                        i += 1
                    } else {
                        throw fail("look-around and group flags are not supported")
                    }
                }
                let inner = try alternation()
                guard i < scalars.count, scalars[i] == ")" else { throw fail("a group is not closed") }
                i += 1
                return inner
            case ")": throw fail("unbalanced )")
            case "*", "+", "?": throw fail("\"\(c)\" has nothing to repeat")
            case "[": return .set(try bracket())
            case ".": return .set(Ranges.subtracting([0...0x10FFFF], [0x0A...0x0A, 0x0D...0x0D, 0x2028...0x2029]))
            case "^": throw fail("^ is only supported at the start")
            case "\\": return .set(try escape(inClass: false))
            default: return .set([c.value...c.value])
            }
        }

        mutating func bracket() throws(PatternError) -> Ranges {
            var negated = false
            if i < scalars.count, scalars[i] == "^" {
                negated = true
                i += 1
            }
            var ranges: Ranges = []
            var first = true
            while i < scalars.count, scalars[i] != "]" || first {
                first = false
                var low: Ranges
                if scalars[i] == "\\" {
                    i += 1
                    low = try escape(inClass: true)
                } else {
                    if scalars[i] == "[" && i + 1 < scalars.count && scalars[i + 1] == ":" {
                        throw fail("POSIX classes [:…:] are not supported")
                    }
                    low = [scalars[i].value...scalars[i].value]
                    i += 1
                }
                if i + 1 < scalars.count, scalars[i] == "-", scalars[i + 1] != "]", low.count == 1,
                    low[0].lowerBound == low[0].upperBound
                {
                    i += 1
                    var high: Ranges
                    if scalars[i] == "\\" {
                        i += 1
                        high = try escape(inClass: true)
                    } else {
                        high = [scalars[i].value...scalars[i].value]
                        i += 1
                    }
                    guard high.count == 1, high[0].lowerBound == high[0].upperBound,
                        low[0].lowerBound <= high[0].lowerBound
                    else { throw fail("a class range is out of order") }
                    low = [low[0].lowerBound...high[0].lowerBound]
                }
                ranges = Ranges.union(ranges, low)
            }
            guard i < scalars.count else { throw fail("a class [ is not closed") }
            i += 1
            return negated ? Ranges.subtracting([0...0x10FFFF], ranges) : ranges
        }

        mutating func escape(inClass: Bool) throws(PatternError) -> Ranges {
            guard i < scalars.count else { throw fail("the pattern ends with \\") }
            let c = scalars[i]
            i += 1
            let digit: Ranges = [0x30...0x39]
            let word: Ranges = [0x30...0x39, 0x41...0x5A, 0x5F...0x5F, 0x61...0x7A]
            let space: Ranges = [0x09...0x0D, 0x20...0x20]
            switch c {
            case "d": return digit
            case "D": return Ranges.subtracting([0...0x10FFFF], digit)
            case "w": return word
            case "W": return Ranges.subtracting([0...0x10FFFF], word)
            case "s": return space
            case "S": return Ranges.subtracting([0...0x10FFFF], space)
            case "n": return [0x0A...0x0A]
            case "t": return [0x09...0x09]
            case "r": return [0x0D...0x0D]
            case "f": return [0x0C...0x0C]
            case "v": return [0x0B...0x0B]
            case "0": return [0...0]
            case "x": return try hex(count: 2)
            case "u":
                if i < scalars.count, scalars[i] == "{" {
                    i += 1
                    var value: UInt32 = 0
                    var digits = 0
                    while i < scalars.count, let d = scalars[i].hexDigitValue {
                        value = value * 16 + UInt32(d)
                        digits += 1
                        i += 1
                        if digits > 6 { throw fail("\\u{…} has too many digits") }
                    }
                    guard digits > 0, i < scalars.count, scalars[i] == "}", value <= 0x10FFFF else {
                        throw fail("a malformed \\u{…} escape")
                    }
                    i += 1
                    return [value...value]
                }
                return try hex(count: 4)
            case "b" where inClass: return [0x08...0x08]
            default:
                if c.properties.isAlphabetic || c.properties.numericType != nil {
                    throw fail("the escape \\\(c) is not supported")
                }
                return [c.value...c.value]
            }
        }

        mutating func hex(count: Int) throws(PatternError) -> Ranges {
            var value: UInt32 = 0
            for _ in 0..<count {
                guard i < scalars.count, let d = scalars[i].hexDigitValue else { throw fail("a malformed hex escape") }
                value = value * 16 + UInt32(d)
                i += 1
            }
            return [value...value]
        }
    }
}

/// A pattern outside the supported subset (or one that matches nothing).
struct PatternError: Error, Sendable {
    let pattern: String
    let message: String
    var description: String { "pattern \"\(pattern)\": \(message)" }
}

extension Unicode.Scalar {
    fileprivate var hexDigitValue: Int? {
        switch value {
        case 0x30...0x39: Int(value - 0x30)
        case 0x41...0x46: Int(value - 0x41 + 10)
        case 0x61...0x66: Int(value - 0x61 + 10)
        default: nil
        }
    }
}

extension Array where Element == ClosedRange<UInt32> {
    /// The union of two sorted range lists, sorted and merged.
    static func union(_ a: Self, _ b: Self) -> Self {
        var all = (a + b).sorted { $0.lowerBound < $1.lowerBound }
        var out: Self = []
        for range in all {
            if let last = out.last, range.lowerBound <= last.upperBound &+ 1 {
                out[out.count - 1] = last.lowerBound...Swift.max(last.upperBound, range.upperBound)
            } else {
                out.append(range)
            }
        }
        all = out
        return all
    }

    /// `a` without the scalars of `b`.
    static func subtracting(_ a: Self, _ b: Self) -> Self {
        var out: Self = []
        for range in a {
            var low = range.lowerBound
            var done = false
            for cut in union([], b) where cut.upperBound >= low && cut.lowerBound <= range.upperBound {
                if cut.lowerBound > low { out.append(low...(cut.lowerBound - 1)) }
                if cut.upperBound >= range.upperBound {
                    done = true
                    break
                }
                low = cut.upperBound + 1
            }
            if !done { out.append(low...range.upperBound) }
        }
        return out
    }
}
