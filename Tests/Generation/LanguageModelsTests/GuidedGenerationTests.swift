import Foundation
import LlamaDecoder
import ModelTestSupport
import TestSupport
import XCTest

@testable import LanguageModels

/// Guided generation: every output valid under its schema by construction. The property test
/// drives the real vocabulary's masks with random logits (an adversary that tries every kind of
/// token: escapes, partial UTF-8, digits past a bound) over 1,000 random schemas, and checks each
/// output with a validator written apart from the grammar (JSONDecoder and NSRegularExpression);
/// sessions over SmolLM2 check the API end to end.
final class GuidedGenerationTests: XCTestCase {
    // MARK: - Random schemas and an independent validator

    /// A schema as the test sees it, turned into a `DynamicGenerationSchema` and validated apart.
    indirect enum Spec {
        case string
        case pattern(String)
        case choice([String])
        case integer(Int?, Int?)
        case number(Double?, Double?)
        case boolean
        case array(Spec, Int?, Int?)
        case object([(name: String, spec: Spec, optional: Bool)])
        case anyOf([Spec])
    }

    /// Patterns the validator checks with NSRegularExpression (ICU): no `.`, whose line
    /// terminators differ between the two.
    static let patterns = [
        "[a-z]{2,5}", #"\d{3}-\d{4}"#, "(cat|dog)s?", "[A-Z][a-z]*", #"[0-9a-f]{8}"#, "(ab|cd)+x", "[^\"\\\\]{1,3}",
        #"\w+@\w+\.com"#, "é[ü-ÿ]?", "(?:yes|no|maybe)", "[ -~]{0,4}",
    ]

    struct Generator {
        var random: SplitMix
        var names = 0

        mutating func spec(depth: Int) -> Spec {
            let pick = random.below(depth >= 3 ? 6 : 9)
            switch pick {
            case 0: return .string
            case 1: return .pattern(GuidedGenerationTests.patterns[random.below(GuidedGenerationTests.patterns.count)])
            case 2:
                let words = ["red", "green", "blue", "a \"quoted\" word", "naïve", "tab\there", "", "日本"]
                return .choice((0..<(1 + random.below(4))).map { _ in words[random.below(words.count)] })
            case 3:
                let low = random.below(3) == 0 ? nil : random.below(200) - 100
                let high = random.below(3) == 0 ? nil : (low ?? -100) + random.below(150)
                return .integer(low, high)
            case 4:
                let low = random.below(3) == 0 ? nil : Double(random.below(2000) - 1000) / 8
                let high = random.below(3) == 0 ? nil : (low ?? -50) + Double(random.below(400)) / 4
                return .number(low, high)
            case 5: return .boolean
            case 6:
                let low = random.below(2) == 0 ? nil : random.below(3)
                let high = random.below(2) == 0 ? nil : (low ?? 0) + random.below(3)
                return .array(spec(depth: depth + 1), low, high)
            case 7:
                let count = random.below(4)
                return .object(
                    (0..<count).map { i in
                        (
                            name: ["id", "name", "values", "x y", "ключ", "a\"b"][(i + random.below(6)) % 6] + "\(i)",
                            spec: spec(depth: depth + 1), optional: random.below(3) == 0
                        )
                    })
            default:
                return .anyOf((0..<(1 + random.below(3))).map { _ in spec(depth: depth + 1) })
            }
        }

        mutating func dynamic(_ spec: Spec) -> DynamicGenerationSchema {
            names += 1
            switch spec {
            case .string: return .init(type: String.self)
            case .pattern(let p): return .init(type: String.self, guides: [.pattern(p)])
            case .choice(let values): return .init(name: "Choice\(names)", anyOf: values)
            case .integer(let low, let high):
                return .init(
                    type: Int.self, guides: [low.map { .minimum($0) }, high.map { .maximum($0) }].compactMap { $0 })
            case .number(let low, let high):
                return .init(
                    type: Double.self, guides: [low.map { .minimum($0) }, high.map { .maximum($0) }].compactMap { $0 })
            case .boolean: return .init(type: Bool.self)
            case .array(let element, let low, let high):
                return .init(arrayOf: dynamic(element), minimumElements: low, maximumElements: high)
            case .object(let properties):
                return .init(
                    name: "Object\(names)",
                    properties: properties.map {
                        .init(name: $0.name, schema: dynamic($0.spec), isOptional: $0.optional)
                    })
            case .anyOf(let choices):
                return .init(name: "AnyOf\(names)", anyOf: choices.map { dynamic($0) })
            }
        }
    }

    /// A JSON value, decoded by Foundation.
    enum JSON: Decodable {
        case bool(Bool)
        case number(Double)
        case string(String)
        case array([JSON])
        case object([String: JSON])
        case null

        init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            if c.decodeNil() {
                self = .null
            } else if let b = try? c.decode(Bool.self) {
                self = .bool(b)
            } else if let n = try? c.decode(Double.self) {
                self = .number(n)
            } else if let s = try? c.decode(String.self) {
                self = .string(s)
            } else if let a = try? c.decode([JSON].self) {
                self = .array(a)
            } else {
                self = .object(try c.decode([String: JSON].self))
            }
        }
    }

    static func valid(_ value: JSON, _ spec: Spec) -> Bool {
        switch (spec, value) {
        case (.string, .string): return true
        case (.pattern(let p), .string(let s)):
            let regex = try! NSRegularExpression(pattern: "^(?:\(p))$")
            return regex.firstMatch(in: s, range: NSRange(s.startIndex..., in: s)) != nil
        case (.choice(let values), .string(let s)): return values.contains(s)
        case (.integer(let low, let high), .number(let n)):
            return n == n.rounded() && n >= Double(low ?? Int.min) && n <= Double(high ?? Int.max)
        case (.number(let low, let high), .number(let n)):
            return n >= (low ?? -.infinity) && n <= (high ?? .infinity)
        case (.boolean, .bool): return true
        case (.array(let element, let low, let high), .array(let items)):
            return items.count >= (low ?? 0) && items.count <= (high ?? Int.max)
                && items.allSatisfy { valid($0, element) }
        case (.object(let properties), .object(let members)):
            let names = Set(properties.map(\.name))
            return members.keys.allSatisfy(names.contains)
                && properties.allSatisfy { p in members[p.name].map { valid($0, p.spec) } ?? p.optional }
        case (.anyOf(let choices), _): return choices.contains { valid(value, $0) }
        default: return false
        }
    }

    // MARK: - Driving the masks

    struct Outcome {
        var text: String
        var complete: Bool
    }

    /// Generates under `grammar` with random logits at temperature 1 (closing tokens favoured, so
    /// that most values end within `budget` tokens).
    static func drive(_ grammar: JSONGrammar, model: LlamaModel, seed: UInt64, budget: Int, favour: [Float]) throws
        -> Outcome
    {
        let decoding = GuidedDecoding(grammar: grammar, model: model)
        var sampler = Sampler(try SamplingParameters(temperature: 1, seed: seed))
        var random = SplitMix(seed: seed &* 31 &+ 7)
        var bytes: [UInt8] = []
        var logits = [Float](repeating: 0, count: favour.count)
        for _ in 0..<budget {
            if decoding.isFinished { return Outcome(text: String(decoding: bytes, as: UTF8.self), complete: true) }
            for i in logits.indices { logits[i] = Float(random.unit() * 4) + favour[i] }
            let any = logits.withUnsafeMutableBufferPointer { decoding.mask($0) }
            XCTAssertTrue(any, "no token allowed after \(String(decoding: bytes, as: UTF8.self))")
            if !any { break }
            let token = logits.withUnsafeBufferPointer { sampler.next($0) }
            if model.stopTokenIDs.contains(token) {
                XCTAssertTrue(decoding.isComplete)
                return Outcome(text: String(decoding: bytes, as: UTF8.self), complete: true)
            }
            decoding.accept(token)
            bytes += model.tokenizer.bytes(for: token)
            XCTAssertFalse(decoding.state.isDead)
        }
        return Outcome(text: String(decoding: bytes, as: UTF8.self), complete: decoding.isFinished)
    }

    static func favour(_ model: LlamaModel) -> [Float] {
        (0..<model.tokenizer.vocabularySize).map { id in
            if model.stopTokenIDs.contains(id) { return 6 }
            return model.tokenizer.bytes(for: id).contains { $0 == 0x22 || $0 == 0x5D || $0 == 0x7D } ? 5 : 0
        }
    }

    /// 1,000 random schemas × a seed each, at temperature 1: every finished output parses and
    /// satisfies its schema; the same schemas with a budget too small stop with a prefix that
    /// still reads as (incomplete) JSON.
    func testThousandRandomSchemasAlwaysValid() throws {
        let model = try TestLanguageModel.shared()
        let favour = Self.favour(model)
        var generator = Generator(random: SplitMix(seed: 2026))
        var finished = 0
        var cut = 0
        for index in 0..<1000 {
            let spec = generator.spec(depth: 0)
            let schema = try GenerationSchema(root: generator.dynamic(spec), dependencies: [])
            let grammar = try JSONGrammar(schema)
            let outcome = try Self.drive(grammar, model: model, seed: UInt64(index), budget: 400, favour: favour)
            if outcome.complete {
                finished += 1
                let value = try JSONDecoder().decode(JSON.self, from: Data(outcome.text.utf8))
                XCTAssertTrue(
                    Self.valid(value, spec), "schema \(index): \(outcome.text) breaks \(schema.debugDescription)")
                let content = try GeneratedContent(json: outcome.text)
                // The reader cannot know that a number at the very end is whole.
                XCTAssertTrue(content.isComplete || outcome.text.last!.isNumber, outcome.text)
            } else {
                XCTAssertNoThrow(try GeneratedContent(json: outcome.text), outcome.text)
            }
            // A budget too small to finish: what was written is the start of a valid value.
            let short = try Self.drive(
                grammar, model: model, seed: UInt64(index) + 1_000_000, budget: 3, favour: favour)
            if !short.complete {
                cut += 1
                XCTAssertNoThrow(try GeneratedContent(json: short.text), short.text)
            }
        }
        print("guided property test: \(finished)/1000 finished within 400 tokens, \(cut) cut short at 3 tokens")
        XCTAssertGreaterThan(finished, 950)
        XCTAssertGreaterThan(cut, 100)
    }

    // MARK: - Patterns

    /// The pattern automaton against NSRegularExpression on strings built from the patterns'
    /// alphabets.
    func testPatternsMatchAsNSRegularExpression() throws {
        var random = SplitMix(seed: 7)
        let alphabet = Array("abcdxyzAZ019-@.comé\u{FC}\u{FF} \"\\ñ")
        for pattern in Self.patterns {
            let compiled = try GuidedPattern(pattern)
            let reference = try NSRegularExpression(pattern: "^(?:\(pattern))$")
            for _ in 0..<400 {
                let s = String((0..<random.below(9)).map { _ in alphabet[random.below(alphabet.count)] })
                let expected = reference.firstMatch(in: s, range: NSRange(s.startIndex..., in: s)) != nil
                XCTAssertEqual(compiled.matches(s), expected, "\(pattern) on \(s)")
            }
        }
        XCTAssertTrue(try GuidedPattern("(cat|dog)s?").matches("dogs"))
        XCTAssertTrue(try GuidedPattern(#"\u{1F600}+"#).matches("😀😀"))
    }

    /// Found by the guidedpattern fuzz target: a pattern of few states whose subset construction
    /// takes minutes (a thousand overlapping loops) is refused by the compile budget, quickly.
    func testPatternTooComplexToCompileIsRefused() throws {
        for pattern in ["a.+{1000}", "(.+){600}", "(a|.)*(.+){500}x"] {
            XCTAssertThrowsError(try GuidedPattern(pattern), pattern) { error in
                XCTAssertTrue((error as? PatternError)?.message.contains("too complex") == true, "\(error)")
            }
        }
        // Below the budget, repeated loops still compile.
        XCTAssertTrue(try GuidedPattern("(.+){20}").matches(String(repeating: "x", count: 25)))
    }

    func testUnsupportedPatternsAreRefusedBeforeGenerating() async throws {
        for pattern in [#"(a)\1"#, "(?=a)b", #"\bword"#, "a{3,2}", "[z-a]", "(abc", "a{5000}", "(?i)abc", "[]"] {
            let schema = try GenerationSchema(
                root: .init(type: String.self, guides: [.pattern(pattern)]), dependencies: [])
            XCTAssertThrowsError(try JSONGrammar(schema), pattern) { error in
                guard case .unsupportedGuide(let context) = error as? LanguageModelSession.GenerationError else {
                    return XCTFail("\(pattern): \(error)")
                }
                XCTAssertTrue(context.debugDescription.contains("pattern"), context.debugDescription)
            }
        }
        // Bounds and counts that exclude every value.
        let impossible: [DynamicGenerationSchema] = [
            .init(type: Int.self, guides: [.minimum(5), .maximum(4)]),
            .init(arrayOf: .init(type: Bool.self), minimumElements: 3, maximumElements: 1),
            .init(type: String.self, guides: [.anyOf(["a"]), .pattern("b")]),
        ]
        let forever = DynamicGenerationSchema(
            name: "Forever", properties: [.init(name: "next", schema: .init(referenceTo: "Forever"))])
        let more: [DynamicGenerationSchema] = [
            .init(type: Double.self, guides: [.range(0.123456789...0.123456789)]),  // between 8-decimal steps
            .init(type: Int.self, guides: [.minimum(1_000_000_000_000_000)]),  // past 15 digits
            .init(type: String.self, guides: [.pattern(#"\uD800"#)]),  // a lone surrogate
            forever,  // no finite value
        ]
        for schema in impossible + more {
            XCTAssertThrowsError(try JSONGrammar(try GenerationSchema(root: schema, dependencies: []))) { error in
                guard case .unsupportedGuide = error as? LanguageModelSession.GenerationError else {
                    return XCTFail("\(error)")
                }
            }
        }
        // Bounds on the 8-decimal grid are exact, a Float's included.
        let tenth = try JSONGrammar(
            GenerationSchema(root: .init(type: Float.self, guides: [.range(0.1...0.1)]), dependencies: []))
        XCTAssertTrue(tenth.accepts(tenth.advance(tenth.initialState, Array("0.1".utf8))))
        XCTAssertTrue(tenth.advance(tenth.initialState, Array("0.11".utf8)).isDead)
        // Through a session: refused before the model is loaded (this one does not exist).
        let session = LanguageModelSession(
            model: SystemLanguageModel(contentsOf: URL(fileURLWithPath: "/nonexistent/model.gguf")))
        let schema = try GenerationSchema(root: .init(type: String.self, guides: [.pattern("(?=x)")]), dependencies: [])
        do {
            try await session.respond(to: "Hi", schema: schema)
            XCTFail("generated under an unsupported pattern")
        } catch LanguageModelSession.GenerationError.unsupportedGuide {}
    }

    // MARK: - The grammar, byte by byte

    func testGrammarLayoutAndEscapes() throws {
        struct Point: Generable, Codable {
            var x: Int
            var label: String?
            static var generationSchema: GenerationSchema {
                GenerationSchema(
                    type: Self.self,
                    properties: [
                        .init(name: "x", type: Int.self, guides: [.range(-5...120)]),
                        .init(name: "label", type: String?.self),
                    ])
            }
        }
        let grammar = try JSONGrammar(Point.generationSchema)
        func accepts(_ text: String) -> Bool {
            grammar.accepts(grammar.advance(grammar.initialState, Array(text.utf8)))
        }
        XCTAssertTrue(accepts(#"{"x": 7}"#))
        XCTAssertTrue(accepts(#"{"x": -5, "label": "a\"b\\c\n\u00e9\ud83d\ude00 é"}"#))
        XCTAssertTrue(accepts(#"{"x": 120}"#))
        XCTAssertFalse(accepts(#"{"x": 121}"#))
        XCTAssertFalse(accepts(#"{"x": -6}"#))
        XCTAssertFalse(accepts(#"{"x": 07}"#))
        XCTAssertFalse(accepts(#"{"x":7}"#), "one layout only")
        XCTAssertFalse(accepts(#"{"label": "a", "x": 7}"#), "properties in the schema's order")
        XCTAssertFalse(accepts(#"{"x": 7, "label": "\ud83d"}"#), "a lone high surrogate")
        XCTAssertFalse(accepts(#"{"x": 7, "label": "\ude00"}"#), "a lone low surrogate")
        XCTAssertFalse(accepts("{\"x\": 7, \"label\": \"a\u{1}\"}"), "a raw control character")
        // A prefix that cannot be completed is dead at once: 12 may become 120, 13 may not become 130.
        let one = grammar.advance(grammar.initialState, Array(#"{"x": 1"#.utf8))
        XCTAssertFalse(grammar.advance(one, Array("20".utf8)).isDead)
        XCTAssertFalse(grammar.advance(one, Array("3".utf8)).isDead)
        XCTAssertTrue(grammar.advance(one, Array("30".utf8)).isDead)
        XCTAssertTrue(grammar.advance(grammar.initialState, Array(#"{"x": -6"#.utf8)).isDead)
        // Characters past U+FFFF may be written raw (UTF-8) or as a surrogate pair.
        XCTAssertTrue(accepts(#"{"x": 7, "label": "😀 𝄞 \ud83d\ude00"}"#))
        // Invalid UTF-8 never enters a string.
        let open = grammar.advance(grammar.initialState, Array(#"{"x": 1, "label": ""#.utf8))
        XCTAssertTrue(grammar.advance(open, 0xC0).isDead)
        XCTAssertTrue(grammar.advance(open, 0x80).isDead)
        XCTAssertTrue(grammar.advance(grammar.advance(open, 0xED), 0xA0).isDead, "a surrogate in UTF-8")
        XCTAssertFalse(grammar.advance(grammar.advance(open, 0xE6), 0x97).isDead)
        // A guided string (a choice, a pattern) has one spelling: characters as themselves, escapes
        // only where JSON requires them; a free string takes every escape.
        let choice = try JSONGrammar(
            GenerationSchema(
                type: GeneratedContent.self,
                properties: [.init(name: "s", type: String.self, guides: [.anyOf(["look/up", "a\"b", "tab\t"])])]))
        func chosen(_ text: String) -> Bool {
            choice.accepts(choice.advance(choice.initialState, Array(#"{"s": "#.utf8) + Array(text.utf8) + [0x7D]))
        }
        XCTAssertTrue(chosen(#""look/up""#))
        XCTAssertFalse(chosen(#""\u006cook/up""#), "a letter escaped")
        XCTAssertFalse(chosen(#""look\/up""#), "a solidus escaped")
        XCTAssertTrue(chosen(#""a\"b""#))
        XCTAssertFalse(chosen(#""a\u0022b""#), "a quote as \\u0022")
        XCTAssertTrue(chosen(#""tab\t""#))
        XCTAssertTrue(chosen(#""tab\u0009""#), "a control character may be \\u-escaped")
        XCTAssertTrue(choice.advance(choice.initialState, Array(#"{"s": "\u006"#.utf8)).isDead, "dead at once")
        XCTAssertTrue(accepts(#"{"x": 7, "label": "\u006c\/"}"#))
        let point = try Point(GeneratedContent(json: #"{"x": 3, "label": "p"}"#))
        XCTAssertEqual(point.x, 3)
        XCTAssertEqual(point.label, "p")
        XCTAssertEqual(try point.generatedContent.value(Int.self, forProperty: "x"), 3)
        XCTAssertEqual(try point.generatedContent.value(String?.self, forProperty: "label"), "p")
    }

    /// The schema text shown to the model says what the grammar enforces: repeated guides are
    /// written as the one they amount to, and a type's named shapes travel with it.
    func testSchemaTextMatchesTheGrammar() throws {
        let schema = try GenerationSchema(
            root: .init(
                name: "Bag",
                properties: [
                    .init(
                        name: "items", description: "what is in the bag",
                        schema: .init(
                            type: [Int].self, guides: [.count(1...10), .maximumCount(3), .element(.minimum(2))])),
                    .init(
                        name: "size", schema: .init(type: Int.self, guides: [.minimum(0), .minimum(5), .maximum(9)])),
                ]), dependencies: [])
        let text = schema.debugDescription
        XCTAssertEqual(text.components(separatedBy: "\"maxItems\"").count, 2, text)
        XCTAssertTrue(text.contains("\"maxItems\":3"), text)
        XCTAssertTrue(text.contains("\"minimum\":5"), text)
        XCTAssertEqual(text.components(separatedBy: "\"minimum\"").count, 3, text)  // items' elements, size
        let grammar = try JSONGrammar(schema)
        XCTAssertTrue(
            grammar.accepts(grammar.advance(grammar.initialState, Array(#"{"items": [2, 3, 4], "size": 5}"#.utf8))))
        XCTAssertTrue(grammar.advance(grammar.initialState, Array(#"{"items": [2, 3, 4, "#.utf8)).isDead)
        XCTAssertTrue(grammar.advance(grammar.initialState, Array(#"{"items": [2], "size": 4"#.utf8)).isDead)

        // A Generable type whose schema refers to named shapes keeps them as a property's type.
        struct Tree: Generable, Codable {
            var label: String
            static var generationSchema: GenerationSchema {
                try! GenerationSchema(
                    root: .init(
                        name: "Tree",
                        properties: [
                            .init(name: "label", schema: .init(type: String.self)),
                            .init(name: "kids", schema: .init(arrayOf: .init(referenceTo: "Tree")), isOptional: true),
                        ]), dependencies: [])
            }
        }
        struct Forest: Generable, Codable {
            var tree: Tree
            static var generationSchema: GenerationSchema {
                GenerationSchema(type: Self.self, properties: [.init(name: "tree", type: Tree.self)])
            }
        }
        let forest = try JSONGrammar(Forest.generationSchema)
        XCTAssertTrue(
            forest.accepts(
                forest.advance(forest.initialState, Array(#"{"tree": {"label": "a", "kids": [{"label": "b"}]}}"#.utf8)))
        )
    }

    /// A recursive schema read byte by byte by a walker that always goes deeper when it may: it
    /// reaches the depth bound, and the grammar still always leaves a way to finish.
    func testRecursionNeverDeadEnds() throws {
        let node = DynamicGenerationSchema(
            name: "Node",
            properties: [
                .init(name: "value", schema: .init(type: Int.self, guides: [.range(0...9)])),
                .init(
                    name: "children", schema: .init(arrayOf: .init(referenceTo: "Node"), maximumElements: 1),
                    isOptional: true),
            ])
        let grammar = try JSONGrammar(GenerationSchema(root: node, dependencies: []))
        var state = grammar.initialState
        var text: [UInt8] = []
        for _ in 0..<20_000 {
            let allowed = (0...255).map(UInt8.init).filter { !grammar.advance(state, $0).isDead }
            if allowed.isEmpty {
                XCTAssertTrue(grammar.accepts(state), "a dead end after \(String(decoding: text, as: UTF8.self))")
                break
            }
            let deeper = allowed.filter { $0 != UInt8(ascii: "}") && $0 != UInt8(ascii: "]") }
            let byte = (deeper.isEmpty ? allowed : deeper).min()!
            state = grammar.advance(state, byte)
            text.append(byte)
        }
        let value = try JSONDecoder().decode(JSON.self, from: Data(text))
        func depth(_ value: JSON) -> Int {
            switch value {
            case .object(let members): 1 + (members.values.map(depth).max() ?? 0)
            case .array(let items): 1 + (items.map(depth).max() ?? 0)
            default: 1
            }
        }
        // Objects and arrays alternate: 64 levels of frames.
        XCTAssertEqual(depth(value), JSONGrammar.maximumDepth)
    }

    // MARK: - Sessions over SmolLM2

    struct Recipe: Generable, Codable {
        var title: String
        var minutes: Int
        var difficulty: String
        var steps: [String]
        static var generationSchema: GenerationSchema {
            GenerationSchema(
                type: Self.self, description: "A short recipe",
                properties: [
                    .init(name: "title", type: String.self),
                    .init(name: "minutes", type: Int.self, guides: [.range(1...90)]),
                    .init(name: "difficulty", type: String.self, guides: [.anyOf(["easy", "medium", "hard"])]),
                    .init(name: "steps", type: [String].self, guides: [.count(2...3)]),
                ])
        }

        struct Partial: Decodable, ConvertibleFromGeneratedContent, Sendable {
            var title: String?
            var minutes: Int?
            var steps: [String]?
        }
        typealias PartiallyGenerated = Partial
    }

    func testGenerableResponseFollowsItsGuides() async throws {
        let session = LanguageModelSession(
            model: try LanguageModelSessionTests.smol.get(), instructions: "You write recipes as JSON.")
        var snapshots = 0
        var sawTitleBeforeEnd = false
        let stream = session.streamResponse(
            to: "A recipe for pancakes.", generating: Recipe.self,
            options: GenerationOptions(sampling: .random(top: 40, seed: 11), temperature: 1, maximumResponseTokens: 300)
        )
        for try await snapshot in stream {
            snapshots += 1
            if snapshot.content.title != nil, !snapshot.rawContent.isComplete { sawTitleBeforeEnd = true }
        }
        let recipe = try await stream.collect().content
        XCTAssertTrue((1...90).contains(recipe.minutes), "\(recipe)")
        XCTAssertTrue(["easy", "medium", "hard"].contains(recipe.difficulty))
        XCTAssertTrue((2...3).contains(recipe.steps.count))
        XCTAssertGreaterThan(snapshots, 5)
        XCTAssertTrue(sawTitleBeforeEnd, "partial values arrive while streaming")
        // The transcript keeps the format, and the next turn reuses the cache.
        guard case .prompt(let prompt) = session.transcript[1] else { return XCTFail("no prompt entry") }
        XCTAssertEqual(prompt.responseFormat?.name, "Recipe")
        let again = try await session.respond(
            to: "Another, for soup.", generating: Recipe.self, options: GenerationOptions(sampling: .greedy))
        XCTAssertTrue((2...3).contains(again.content.steps.count))
        XCTAssertGreaterThan(session.lastPromptTokenCounts?.reused ?? 0, 100)
    }

    func testBudgetTooSmallIsDecodingFailure() async throws {
        let session = LanguageModelSession(model: try LanguageModelSessionTests.smol.get())
        do {
            try await session.respond(
                to: "A recipe for pancakes.", generating: Recipe.self,
                options: GenerationOptions(sampling: .greedy, maximumResponseTokens: 4))
            XCTFail("a recipe in 4 tokens")
        } catch LanguageModelSession.GenerationError.decodingFailure(let context) {
            XCTAssertTrue(context.debugDescription.contains("ran out of tokens"), context.debugDescription)
        }
        XCTAssertFalse(session.isResponding)
        // Plain types are Generable too.
        let number = try await session.respond(
            to: "How many legs does a spider have?", generating: Int.self, options: GenerationOptions(sampling: .greedy)
        )
        XCTAssertTrue(number.rawContent.isComplete)
        XCTAssertEqual(try Int(number.rawContent), number.content)
        let flag = try await session.respond(
            to: "Is the sky blue? Answer true or false.", generating: Bool.self,
            options: GenerationOptions(sampling: .greedy))
        _ = flag.content
    }

    func testDynamicSchemaWithReferences() async throws {
        let person = DynamicGenerationSchema(
            name: "Person",
            properties: [
                .init(name: "name", schema: .init(type: String.self, guides: [.pattern("[A-Z][a-z]{1,8}")])),
                .init(name: "age", schema: .init(type: Int.self, guides: [.range(0...120)])),
                .init(
                    name: "friends", schema: .init(arrayOf: .init(referenceTo: "Person"), maximumElements: 1),
                    isOptional: true),
            ])
        let schema = try GenerationSchema(root: person, dependencies: [])
        XCTAssertThrowsError(
            try GenerationSchema(
                root: .init(name: "A", properties: [.init(name: "b", schema: .init(referenceTo: "B"))]),
                dependencies: []))
        XCTAssertThrowsError(
            try GenerationSchema(
                root: .init(
                    name: "A",
                    properties: [
                        .init(name: "b", schema: .init(type: Int.self)),
                        .init(name: "b", schema: .init(type: Int.self)),
                    ]),
                dependencies: []))
        let session = LanguageModelSession(model: try LanguageModelSessionTests.smol.get())
        for seed in 0..<3 {
            let response = try await session.respond(
                to: "Describe a person.", schema: schema,
                options: GenerationOptions(
                    sampling: .random(probabilityThreshold: 0.95, seed: UInt64(seed)), temperature: 1,
                    maximumResponseTokens: 200))
            let name = try response.content.value(String.self, forProperty: "name")
            XCTAssertNotNil(name.range(of: "^[A-Z][a-z]{1,8}$", options: .regularExpression), name)
            XCTAssertTrue((0...120).contains(try response.content.value(Int.self, forProperty: "age")))
        }
    }
}

/// The test's own seeded generator.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    mutating func unit() -> Double { Double(next() >> 11) * 0x1p-53 }
}
