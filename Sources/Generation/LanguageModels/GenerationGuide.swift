/// A rule a generated value must follow, enforced while decoding: Apple's `GenerationGuide`.
///
/// ```swift
/// GenerationSchema.Property(name: "rating", type: Int.self, guides: [.range(1...5)])
/// GenerationSchema.Property(name: "tags", type: [String].self, guides: [.count(2...4)])
/// ```
/// Every guide holds for every guided response, by construction: the decoder never chooses a
/// token that would break one. What differs from Apple's: `pattern` takes the regular
/// expression's text (Swift's `Regex` does not expose its source), in the subset that
/// `Docs/LanguageModels.md` states; a pattern outside it is `.unsupportedGuide` before generating.
public struct GenerationGuide<Value>: Sendable {
    let rule: GuideRule

    init(_ rule: GuideRule) { self.rule = rule }
}

/// What a guide asks, whatever its value type.
indirect enum GuideRule: Sendable, Equatable, Codable {
    case anyOf([String])
    case pattern(String)
    case minimum(Double)
    case maximum(Double)
    case minimumCount(Int)
    case maximumCount(Int)
    case element(GuideRule)
    /// Several rules at once (a range: a minimum and a maximum).
    case all([GuideRule])

    /// The rules this one holds, `all` unpacked.
    var rules: [GuideRule] {
        if case .all(let rules) = self { return rules.flatMap(\.rules) }
        return [self]
    }
}

extension GenerationGuide where Value == String {
    /// Exactly `value`.
    public static func constant(_ value: String) -> Self { Self(.anyOf([value])) }
    /// One of `values`.
    public static func anyOf(_ values: [String]) -> Self { Self(.anyOf(values)) }
    /// A string that `pattern`, a regular expression, matches whole (`Docs/LanguageModels.md`
    /// lists the syntax; Apple's takes a `Regex`).
    public static func pattern(_ pattern: String) -> Self { Self(.pattern(pattern)) }
}

extension GenerationGuide where Value == Int {
    /// At least `value`.
    public static func minimum(_ value: Int) -> Self { Self(.minimum(Double(value))) }
    /// At most `value`.
    public static func maximum(_ value: Int) -> Self { Self(.maximum(Double(value))) }
    /// Within `range`.
    public static func range(_ range: ClosedRange<Int>) -> Self {
        .bounds(Double(range.lowerBound), Double(range.upperBound))
    }
}

extension GenerationGuide where Value == Double {
    /// At least `value`.
    public static func minimum(_ value: Double) -> Self { Self(.minimum(value)) }
    /// At most `value`.
    public static func maximum(_ value: Double) -> Self { Self(.maximum(value)) }
    /// Within `range`.
    public static func range(_ range: ClosedRange<Double>) -> Self { .bounds(range.lowerBound, range.upperBound) }
}

extension GenerationGuide where Value == Float {
    /// At least `value`.
    public static func minimum(_ value: Float) -> Self { Self(.minimum(widened(value))) }
    /// At most `value`.
    public static func maximum(_ value: Float) -> Self { Self(.maximum(widened(value))) }
    /// Within `range`.
    public static func range(_ range: ClosedRange<Float>) -> Self {
        .bounds(widened(range.lowerBound), widened(range.upperBound))
    }

    /// The `Double` a `Float` is written as (`0.1` for `Float(0.1)`, not 0.10000000149…), so that
    /// a bound means the number its code shows.
    private static func widened(_ value: Float) -> Double { Double("\(value)") ?? Double(value) }
}

extension GenerationGuide {
    /// Both bounds.
    fileprivate static func bounds(_ low: Double, _ high: Double) -> Self {
        Self(.all([.minimum(low), .maximum(high)]))
    }

    /// At least `count` elements.
    public static func minimumCount<Element>(_ count: Int) -> GenerationGuide<[Element]> where Value == [Element] {
        GenerationGuide<[Element]>(.minimumCount(count))
    }
    /// At most `count` elements.
    public static func maximumCount<Element>(_ count: Int) -> GenerationGuide<[Element]> where Value == [Element] {
        GenerationGuide<[Element]>(.maximumCount(count))
    }
    /// Exactly `count` elements.
    public static func count<Element>(_ count: Int) -> GenerationGuide<[Element]> where Value == [Element] {
        GenerationGuide<[Element]>(.all([.minimumCount(count), .maximumCount(count)]))
    }
    /// A number of elements within `range`.
    public static func count<Element>(_ range: ClosedRange<Int>) -> GenerationGuide<[Element]>
    where Value == [Element] {
        GenerationGuide<[Element]>(.all([.minimumCount(range.lowerBound), .maximumCount(range.upperBound)]))
    }
    /// `guide` on every element.
    public static func element<Element>(_ guide: GenerationGuide<Element>) -> GenerationGuide<[Element]>
    where Value == [Element] {
        GenerationGuide<[Element]>(.element(guide.rule))
    }
}
