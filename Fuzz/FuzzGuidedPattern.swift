// libFuzzer target: arbitrary bytes as a pattern and a text (split at the first NUL byte; UTF-8,
// repaired). The pattern compiles to GuidedPattern's automaton or is refused with PatternError;
// never a crash, and never more states than its bounds. When it compiles, walking the text
// scalar by scalar agrees with `matches`, every state reached can still lead to a match (the
// automaton keeps no dead states), and a pattern without metacharacters matches itself.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGuidedPatternInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let split = bytes.firstIndex(of: 0) ?? size
    let source = String(decoding: bytes[..<split], as: UTF8.self)
    let text = split < size ? String(decoding: bytes[(split + 1)...], as: UTF8.self) : ""
    let pattern: GuidedPattern
    do { pattern = try GuidedPattern(source) } catch {
        _ = error.message
        return 0
    }
    var state = pattern.start
    var alive = true
    for scalar in text.unicodeScalars {
        state = pattern.advance(state, scalar.value)
        if state < 0 {
            alive = false
            break
        }
        // Some continuation still matches: a state that can reach a match.
        precondition(pattern.accepts(state, anyOf: 0, 0x10FFFF) || pattern.isMatch(state), "a dead state in \(source)")
    }
    precondition(pattern.matches(text) == (alive && pattern.isMatch(state)), "walk and matches differ: \(source)")
    let meta = Set("\\^$.|?*+()[]{}".unicodeScalars)
    if !source.isEmpty, !source.unicodeScalars.contains(where: { meta.contains($0) }) {
        precondition(pattern.matches(source), "a literal pattern does not match itself: \(source)")
    }
    return 0
}
