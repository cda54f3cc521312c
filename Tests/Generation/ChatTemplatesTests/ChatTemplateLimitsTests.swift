import ChatTemplates
import XCTest

/// Hostile templates fail with `limitExceeded` instead of crashing or hanging: deep nesting is refused
/// when loading, huge loops, huge strings and deep values when rendering.
final class ChatTemplateLimitsTests: XCTestCase {
    private func assertLimit(
        _ body: @autoclosure () throws -> Any, _ label: String, file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try body(), label, file: file, line: line) { error in
            XCTAssertEqual(
                (error as? ChatTemplateError)?.code, .limitExceeded, "\(label): \(error)", file: file, line: line)
        }
    }

    func testDeeplyNestedExpressionsAreRefusedAtLoad() {
        let depth = 10_000
        let parentheses = String(repeating: "(", count: depth) + "1" + String(repeating: ")", count: depth)
        assertLimit(try ChatTemplate(source: "{{ \(parentheses) }}"), "parentheses")
        let brackets = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        assertLimit(try ChatTemplate(source: "{{ \(brackets) }}"), "brackets")
        assertLimit(try ChatTemplate(source: "{{ " + String(repeating: "not ", count: depth) + "x }}"), "not")
        assertLimit(try ChatTemplate(source: "{{ " + String(repeating: "- ", count: depth) + "1 }}"), "unary minus")
        assertLimit(
            try ChatTemplate(source: "{{ 1" + String(repeating: " if x else 1", count: depth) + " }}"), "conditional")
    }

    func testDeeplyNestedBlocksAreRefusedAtLoad() {
        let depth = 10_000
        let source = String(repeating: "{% if x %}", count: depth) + String(repeating: "{% endif %}", count: depth)
        assertLimit(try ChatTemplate(source: source), "if blocks")
    }

    func testNestingWithinTheLimitLoads() throws {
        let limits = ChatTemplate.Limits(maximumNestingDepth: 8)
        XCTAssertNoThrow(
            try ChatTemplate(source: "{% if a %}{% for b in c %}{{ (d + e) }}{% endfor %}{% endif %}", limits: limits))
        let deep = String(repeating: "{% if x %}", count: 9) + String(repeating: "{% endif %}", count: 9)
        assertLimit(try ChatTemplate(source: deep, limits: limits), "nine blocks")
    }

    /// With the default limits this stops after about a second in a release build; a smaller budget
    /// keeps the test quick.
    func testHugeLoopsRunOutOfWork() throws {
        let limits = ChatTemplate.Limits(maximumWork: 200_000)
        let template = try ChatTemplate(
            source: "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", limits: limits)
        assertLimit(try template.render(context: [:]), "nested ranges")
        let scanning = try ChatTemplate(
            source: "{% set s = 'x' * 100000 %}{% for i in range(100000) %}{% if 'y' in s %}{% endif %}{% endfor %}",
            limits: limits)
        assertLimit(try scanning.render(context: [:]), "repeated scans of a long string")
        assertLimit(try ChatTemplate(source: "{{ range(1000000000) | length }}").render(context: [:]), "range length")
    }

    func testRealTemplatesUseLittleOfTheBudget() throws {
        let fixture = try ChatFixture.load("generation/chat-templates-jinja.json")
        var messages: [ChatMessage] = [.system("You are helpful.")]
        for index in 0..<500 {
            messages.append(
                index.isMultiple(of: 2)
                    ? .user(String(repeating: "question \(index) ", count: 50))
                    : .assistant(String(repeating: "answer ", count: 80)))
        }
        for name in ["smollm2", "qwen2.5", "llama3", "llama3.1", "llama3.2"] {
            let source = try fixture.object("templates").string(name)
            let template = try ChatTemplate(source: source, limits: .init(maximumWork: 100_000))
            let prompt = try template.render(
                messages: messages, addGenerationPrompt: true, variables: ["bos_token": "<s>"])
            XCTAssertGreaterThan(prompt.utf8.count, 300_000, name)
        }
    }

    func testRunawayStringsHitTheOutputLimit() throws {
        let doubling = try ChatTemplate(
            source:
                "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"
                + "{{ ns.s }}"
        )
        assertLimit(try doubling.render(context: [:]), "doubling")
        assertLimit(try ChatTemplate(source: "{{ 'x' * 1000000000000 }}").render(context: [:]), "repetition")
        assertLimit(try ChatTemplate(source: "{{ [1] * 1000000000000 }}").render(context: [:]), "list repetition")
        let limits = ChatTemplate.Limits(maximumOutputLength: 1000)
        let long = try ChatTemplate(source: "{% for i in range(100) %}0123456789abcdef{% endfor %}", limits: limits)
        assertLimit(try long.render(context: [:]), "output")
        XCTAssertEqual(
            try ChatTemplate(source: "{% for i in range(10) %}0123456789{% endfor %}", limits: limits).render(
                context: [:]).count,
            100)
    }

    func testDeepValuesBuiltByALoopFailWhenPrinted() throws {
        let template = try ChatTemplate(
            source:
                "{% set ns = namespace(v=[]) %}{% for i in range(5000) %}{% set ns.v = [ns.v] %}{% endfor %}{{ ns.v }}")
        assertLimit(try template.render(context: [:]), "print")
        let json = try ChatTemplate(
            source:
                "{% set ns = namespace(v=[]) %}{% for i in range(5000) %}{% set ns.v = [ns.v] %}{% endfor %}"
                + "{{ ns.v | tojson }}"
        )
        assertLimit(try json.render(context: [:]), "tojson")
    }

    func testRunawayMacroRecursionStops() throws {
        let template = try ChatTemplate(source: "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}")
        assertLimit(try template.render(context: [:]), "recursion")
        let fanOut = try ChatTemplate(
            source: "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}",
            limits: .init(maximumWork: 100_000))
        assertLimit(try fanOut.render(context: [:]), "exponential fan-out")
    }

    func testWorkLimitIsConfigurable() throws {
        let limits = ChatTemplate.Limits(maximumWork: 1000)
        let template = try ChatTemplate(source: "{% for i in range(2000) %}{% endfor %}", limits: limits)
        assertLimit(try template.render(context: [:]), "2000 iterations")
    }
}
