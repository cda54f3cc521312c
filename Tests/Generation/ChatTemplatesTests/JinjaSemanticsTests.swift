import ChatTemplates
import Foundation
import XCTest

/// The Jinja subset, one semantic at a time: every snippet of the Python fixture (whitespace control,
/// scoping, loops, printing of values, filters, tests, methods, errors) rendered identically, named
/// whitespace edge cases, constructs refused at load time with their location, and `JinjaValue` JSON.
final class JinjaSemanticsTests: XCTestCase {
    private func render(_ source: String, _ context: [String: JinjaValue] = [:]) throws -> String {
        try ChatTemplate(source: source).render(context: context)
    }

    // MARK: - Parity with Python

    func testSnippetsMatchJinjaConfiguredLikeTransformers() throws {
        let fixture = try ChatFixture.load("generation/chat-templates-jinja.json")
        let context = try fixture.object("snippet_context").dictionary
        var checked = 0
        for snippet in try fixture.array("snippets") {
            let source = try snippet.string("source")
            let label = source.debugDescription
            if let error = snippet["error"], try error.string("phase") == "parse" {
                XCTAssertThrowsError(try ChatTemplate(source: source), label) { error in
                    XCTAssertEqual((error as? ChatTemplateError)?.code, .syntax, "\(label): \(error)")
                }
                checked += 1
                continue
            }
            let template: ChatTemplate
            do {
                template = try ChatTemplate(source: source)
            } catch {
                XCTFail("\(label): refused at load: \(error)")
                continue
            }
            let outcome = Result { () throws(ChatTemplateError) -> String in
                try template.render(context: context, now: ChatFixture.fixedNow)
            }
            try ChatFixture.check(outcome, against: snippet, label: label)
            checked += 1
        }
        XCTAssertEqual(checked, 176)
    }

    // MARK: - Whitespace

    func testTrimBlocksRemovesOnlyTheFirstNewlineAfterABlockTag() throws {
        XCTAssertEqual(try render("{% if true %}\n\nx{% endif %}"), "\nx")
        XCTAssertEqual(try render("{# comment #}\nx"), "x")
        XCTAssertEqual(try render("{{ 'v' }}\nx"), "v\nx", "variable tags are not trimmed")
        XCTAssertEqual(try render("{% if true +%}\nx{% endif %}"), "\nx", "+%} keeps the newline")
    }

    func testLstripBlocksStripsIndentationBeforeABlockTagOnItsLine() throws {
        XCTAssertEqual(try render("a\n    {% if true %}b{% endif %}"), "a\nb")
        XCTAssertEqual(try render("a  {% if true %}b{% endif %}"), "a  b", "text before the tag on its line stays")
        XCTAssertEqual(try render("a\n  {{ 'b' }}"), "a\n  b", "variable tags are not lstripped")
        XCTAssertEqual(try render("a\n  {%+ if true %}b{% endif %}"), "a\n  b", "{%+ keeps the indentation")
    }

    func testMinusStripsAllWhitespaceIncludingNewlines() throws {
        XCTAssertEqual(try render("a \n\n {{- 'b' -}} \n\n c"), "abc")
        XCTAssertEqual(try render("a\n\n{%- if true -%}\n\nb\n\n{%- endif -%}\n\nc"), "abc")
        XCTAssertEqual(try render("a \n {#- c -#} \n b"), "ab")
    }

    func testNewlinesAreNormalizedAndOneTrailingNewlineIsDropped() throws {
        XCTAssertEqual(try render("a\r\nb\rc\n"), "a\nb\nc")
        XCTAssertEqual(try render("a\n\n"), "a\n")
        XCTAssertEqual(try render(""), "")
        XCTAssertEqual(try render("   "), "   ")
    }

    // MARK: - Scoping

    func testSetInsideALoopLastsOneIterationButNamespacesPersist() throws {
        XCTAssertEqual(try render("{% set x = 0 %}{% for i in [1, 2] %}{% set x = i %}{% endfor %}{{ x }}"), "0")
        XCTAssertEqual(
            try render("{% set ns = namespace(x=0) %}{% for i in [1, 2] %}{% set ns.x = i %}{% endfor %}{{ ns.x }}"),
            "2")
        XCTAssertEqual(try render("{% if true %}{% set x = 1 %}{% endif %}{{ x }}"), "1")
    }

    // MARK: - Refused constructs

    /// Each source is valid Jinja this interpreter does not implement; the error names it and points at it.
    func testUnsupportedConstructsAreRefusedAtLoadWithTheirLocation() {
        let cases: [(source: String, construct: String, line: Int, column: Int)] = [
            ("x\n  {% call foo() %}{% endcall %}", "call", 2, 3),
            ("{% macro m() %}{{ caller() }}{% endmacro %}", "caller", 1, 19),
            ("{% filter upper %}x{% endfilter %}", "filter", 1, 1),
            ("{% with a = 1 %}{{ a }}{% endwith %}", "with", 1, 1),
            ("{% include 'other.jinja' %}", "include", 1, 1),
            ("{% import 'macros' as m %}", "import", 1, 1),
            ("{% extends 'base' %}", "extends", 1, 1),
            ("{% block body %}{% endblock %}", "block", 1, 1),
            ("{% autoescape true %}{% endautoescape %}", "autoescape", 1, 1),
            ("{% do items.append(1) %}", "do", 1, 1),
            ("{% for x in xs recursive %}{% endfor %}", "recursive", 1, 16),
            ("{{ xs | sort }}", "sort", 1, 9),
            ("{{ d | dictsort }}", "dictsort", 1, 8),
            ("{{ xs | unique | list }}", "unique", 1, 9),
            ("{{ '%s' | format(1) }}", "format", 1, 11),
            ("{{ 'a {}'.format(1) }}", "format", 1, 11),
            ("{{ s.zfill(3) }}", "zfill", 1, 6),
            ("{{ cycler('a', 'b') }}", "cycler", 1, 4),
            ("{{ f(*args) }}", "f", 1, 4),
            ("{{ 'x' is escaped }}", "escaped", 1, 11),
            ("{% set x | upper %}x{% endset %}", "filter", 1, 10),
            ("{{ xs | map('sort') | list }}", "sort", 1, 13),
            ("{{ '\\N{BULLET}' }}", "\\N", 1, 5),
        ]
        for (source, construct, line, column) in cases {
            XCTAssertThrowsError(try ChatTemplate(source: source), source) { error in
                guard let error = error as? ChatTemplateError else { return XCTFail("\(source): \(error)") }
                XCTAssertEqual(error.code, .unsupported, "\(source): \(error)")
                XCTAssertTrue(error.message.contains(construct), "\(source): \(error.message)")
                XCTAssertEqual(error.location, ChatTemplateError.Location(line: line, column: column), source)
                XCTAssertTrue(error.description.hasPrefix("line \(line), column \(column): "), error.description)
            }
        }
    }

    func testMalformedTemplatesAreSyntaxErrorsWithTheirLocation() {
        let cases: [(source: String, line: Int, column: Int)] = [
            ("ok\n{% if x %}never closed", 2, 1),
            ("{{ 'a' + }}", 1, 10),
            ("{% nosuchtag %}", 1, 1),
            ("{{ x | nosuchfilter }}", 1, 8),
            ("a\nb {# open", 2, 3),
            ("{{ x ) }}", 1, 6),
            ("{{ 1 $ 2 }}", 1, 6),
        ]
        for (source, line, column) in cases {
            XCTAssertThrowsError(try ChatTemplate(source: source), source) { error in
                XCTAssertEqual((error as? ChatTemplateError)?.code, .syntax, "\(source): \(error)")
                XCTAssertEqual(
                    (error as? ChatTemplateError)?.location, .init(line: line, column: column), "\(source): \(error)")
            }
        }
    }

    func testStringFormattingWithPercentIsRefusedWhenRendering() throws {
        let template = try ChatTemplate(source: "{{ '%s!' % name }}")
        XCTAssertThrowsError(try template.render(context: ["name": "x"])) { error in
            XCTAssertEqual((error as? ChatTemplateError)?.code, .unsupported)
        }
    }

    func testIntegerOverflowIsAnErrorNotAWrongNumber() throws {
        XCTAssertThrowsError(try render("{{ 2 ** 100 }}")) { error in
            XCTAssertEqual((error as? ChatTemplateError)?.code, .invalidOperation)
        }
        XCTAssertThrowsError(try ChatTemplate(source: "{{ 99999999999999999999 }}"))
    }

    // MARK: - Values

    func testJinjaValueJSONKeepsKeyOrderForToJSON() throws {
        let tool = try JinjaValue(json: #"{"name": "f", "parameters": {"z": 1, "a": [true, null, 2.5, "é\n"]}}"#)
        XCTAssertEqual(
            try render("{{ tool | tojson }}", ["tool": tool]),
            #"{"name": "f", "parameters": {"z": 1, "a": [true, null, 2.5, "é\n"]}}"#)
        guard case .object(let object) = tool else { return XCTFail("not an object") }
        XCTAssertEqual(object.keys, ["name", "parameters"])
    }

    func testJinjaValueJSONRejectsMalformedAndTooDeepInput() {
        for text in ["", "{", "[1,]", "{\"a\" 1}", "01", "\"\\ud800\"", "nul", "[1] x", "99999999999999999999"] {
            XCTAssertThrowsError(try JinjaValue(json: text), text) { error in
                XCTAssertEqual((error as? ChatTemplateError)?.code, .invalidJSON, text)
            }
        }
        let deep =
            String(repeating: "[", count: JinjaValue.maximumJSONDepth + 1)
            + String(repeating: "]", count: JinjaValue.maximumJSONDepth + 1)
        XCTAssertThrowsError(try JinjaValue(json: deep))
        XCTAssertNoThrow(try JinjaValue(json: "[\"\\ud83d\\ude00\", -0.5e3, {}]"))
    }

    func testJinjaObjectKeepsInsertionOrderAndRemoves() {
        var object: JinjaObject = ["b": 1, "a": 2]
        object["c"] = 3
        object["b"] = 4
        XCTAssertEqual(object.keys, ["b", "a", "c"])
        object["a"] = nil
        XCTAssertEqual(object.keys, ["b", "c"])
        XCTAssertEqual(object.count, 2)
        XCTAssertEqual(object, ["c": 3, "b": 4], "equality ignores order, as Python dicts")
    }
}
