import ChatTemplates
import Foundation
import TestSupport
import XCTest

/// Real chat templates (SmolLM2, Qwen2.5, Llama 3, 3.1, 3.2) rendered against Python: jinja2 configured
/// as transformers configures it (Fixtures/generation/chat-templates-jinja.json, from
/// chat_templates_jinja.py) and transformers' own `apply_chat_template` (chat-templates.json, when
/// present). Every template × conversation × add_generation_prompt must match byte for byte, and every
/// conversation Python refuses must be refused with the matching error.
final class ChatTemplateTests: XCTestCase {
    // MARK: - Parity with Python

    func testRealTemplatesMatchJinjaConfiguredLikeTransformers() throws {
        let fixture = try ChatFixture.load("generation/chat-templates-jinja.json")
        let templates = try fixture.object("templates")
        var checked = 0
        for testCase in try fixture.array("cases") {
            let name = try testCase.string("template")
            let label =
                "\(name)/\(try testCase.string("conversation"))/agp=\(try testCase.bool("add_generation_prompt"))"
            let template = try ChatTemplate(source: try templates.string(name))
            let messages = try testCase.array("messages")
            let addGenerationPrompt = try testCase.bool("add_generation_prompt")
            let variables = try testCase.object("variables").dictionary
            let outcome = Result { () throws(ChatTemplateError) -> String in
                try template.render(
                    messageValues: messages, addGenerationPrompt: addGenerationPrompt, variables: variables,
                    now: ChatFixture.fixedNow)
            }
            try ChatFixture.check(outcome, against: testCase, label: label)
            checked += 1
        }
        XCTAssertEqual(checked, 136)
    }

    func testRealTemplatesMatchTransformersApplyChatTemplate() throws {
        let url = TestFixtures.folder.appendingPathComponent("generation/chat-templates.json")
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw XCTSkip("Fixtures/generation/chat-templates.json (transformers' renderings) is not generated yet")
        }
        let fixture = try ChatFixture.load("generation/chat-templates.json")
        var templates: [String: (template: ChatTemplate, variables: [String: JinjaValue])] = [:]
        for entry in try fixture.array("templates") {
            var variables = try entry.object("template_kwargs").dictionary
            for key in ["bos_token", "eos_token"] {
                if let token = entry[key], token != .none { variables[key] = token }
            }
            templates[try entry.string("name")] = (try ChatTemplate(source: try entry.string("source")), variables)
        }
        var checked = 0
        for testCase in try fixture.array("cases") {
            let name = try testCase.string("template")
            let label =
                "\(name)/\(try testCase.string("conversation"))/agp=\(try testCase.bool("add_generation_prompt"))"
            let (template, templateVariables) = try XCTUnwrap(templates[name], "\(label): no template \(name)")
            var variables = templateVariables
            // Tool cases were rendered with apply_chat_template(tools=...); some cases add template kwargs.
            if let tools = testCase["tools"] { variables["tools"] = tools }
            if let extra = testCase["extra_kwargs"] {
                variables.merge(extra.dictionary) { _, given in given }
            }
            // transformers drops None-valued message keys and aliases reasoning fields before rendering;
            // where that changed the messages, the case holds what the template saw.
            let messages =
                try testCase["messages_seen_by_template"] != nil
                ? testCase.array("messages_seen_by_template") : testCase.array("messages")
            let addGenerationPrompt = try testCase.bool("add_generation_prompt")
            let outcome = Result { () throws(ChatTemplateError) -> String in
                try template.render(
                    messageValues: messages, addGenerationPrompt: addGenerationPrompt, variables: variables)
            }
            if let rendered = testCase["rendered"] {
                ChatFixture.assertSameText(try outcome.get(), try rendered.text(), label)
            } else {
                let pythonError = try testCase.object("error")
                XCTAssertThrowsError(try outcome.get(), "\(label): transformers refused this conversation") { error in
                    let error = error as? ChatTemplateError
                    let type = (try? pythonError.string("type")) ?? ""
                    XCTAssertEqual(error?.code, ChatFixture.expectedCode(forPython: type), label)
                    if type == "TemplateError" {
                        XCTAssertEqual(error?.message, try? pythonError.string("message"), label)
                    }
                }
            }
            checked += 1
        }
        XCTAssertGreaterThan(checked, 0)
    }

    // MARK: - The SmolLM2 template

    private static let smolLM2Source =
        "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
        + "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
        + "<|im_end|>\n' }}"
        + "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
        + "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"

    func testSmolLM2PromptForOneUserMessage() throws {
        let fixture = try ChatFixture.load("generation/chat-templates-jinja.json")
        XCTAssertEqual(Self.smolLM2Source, try fixture.object("templates").string("smollm2"))
        let template = try ChatTemplate(source: Self.smolLM2Source)
        XCTAssertEqual(template.family, .chatML)
        let prompt = try template.render(messages: [.user("Hello!")], addGenerationPrompt: true)
        XCTAssertEqual(
            prompt,
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
                + "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n")
    }

    func testMessageContentIsNeverEvaluated() throws {
        let template = try ChatTemplate(source: Self.smolLM2Source)
        let hostile = "{{ raise_exception('x') }}{% for m in messages %}{% endfor %}{# c #}{%- raw %}"
        let prompt = try template.render(messages: [.system("s"), .user(hostile)], addGenerationPrompt: false)
        XCTAssertEqual(prompt, "<|im_start|>system\ns<|im_end|>\n<|im_start|>user\n\(hostile)<|im_end|>\n")
    }

    func testRenderingIsDeterministic() throws {
        let fixture = try ChatFixture.load("generation/chat-templates-jinja.json")
        let source = try fixture.object("templates").string("llama3.1")
        let messages: [ChatMessage] = [.system("Be brief."), .user("Hi"), .assistant("Hello."), .user("Bye")]
        let first = try ChatTemplate(source: source).render(messages: messages, addGenerationPrompt: true)
        for _ in 0..<3 {
            XCTAssertEqual(
                try ChatTemplate(source: source).render(messages: messages, addGenerationPrompt: true), first)
        }
    }

    // MARK: - API

    func testFamilyRecognisesChatMLAndLlama3() throws {
        let fixture = try ChatFixture.load("generation/chat-templates-jinja.json")
        let templates = try fixture.object("templates")
        let expected: [String: ChatTemplate.Family] = [
            "smollm2": .chatML, "qwen2.5": .chatML, "llama3": .llama3, "llama3.1": .llama3, "llama3.2": .llama3,
        ]
        for (name, family) in expected {
            XCTAssertEqual(try ChatTemplate(source: try templates.string(name)).family, family, name)
        }
        XCTAssertEqual(try ChatTemplate(source: "{% for m in messages %}[{{ m.content }}]{% endfor %}").family, .other)
    }

    func testChatMessageShapes() {
        XCTAssertEqual(ChatMessage.user("q"), ChatMessage(role: .user, content: "q"))
        XCTAssertEqual(ChatMessage(role: "ipython", content: "42").role.rawValue, "ipython")
        XCTAssertEqual(ChatMessage.tool("r").jinjaValue, ["role": "tool", "content": "r"])
        XCTAssertEqual(ChatMessage.assistant("a").role, .assistant)
        XCTAssertEqual(ChatMessage.system("s").role.description, "system")
    }

    func testTransformersDefaultsToolsAndDocumentsToNone() throws {
        let template = try ChatTemplate(
            source: "{{ tools is defined }} {{ tools is none }} {{ documents is none }} {{ add_generation_prompt }}")
        XCTAssertEqual(try template.render(messages: [], addGenerationPrompt: true), "True True True True")
        XCTAssertEqual(
            try template.render(messages: [], addGenerationPrompt: false, variables: ["tools": []]),
            "True False True False")
        XCTAssertEqual(try template.render(context: [:]), "False False False ")
    }

    func testMessagesAndGenerationFlagCannotBeOverriddenByVariables() throws {
        let template = try ChatTemplate(source: "{{ messages | length }} {{ add_generation_prompt }}")
        let prompt = try template.render(
            messages: [.user("a")], addGenerationPrompt: false,
            variables: ["messages": [], "add_generation_prompt": true])
        XCTAssertEqual(prompt, "1 False")
    }

    func testRaiseExceptionCarriesTheTemplatesMessageAndLocation() throws {
        let template = try ChatTemplate(
            source:
                "{% for m in messages %}\n  {% if m.role == 'tool' %}"
                + "{{ raise_exception('Tools are not supported: ' ~ m.content) }}{% endif %}\n{% endfor %}"
        )
        XCTAssertEqual(try template.render(messages: [.user("fine")], addGenerationPrompt: false), "")
        XCTAssertThrowsError(try template.render(messages: [.tool("x")], addGenerationPrompt: false)) { error in
            let error = error as? ChatTemplateError
            XCTAssertEqual(error?.code, .raisedByTemplate)
            XCTAssertEqual(error?.message, "Tools are not supported: x")
            XCTAssertEqual(error?.location?.line, 2)
        }
    }

    func testLlama3ForbidsTwoToolCallsWithItsOwnMessage() throws {
        let fixture = try ChatFixture.load("generation/chat-templates-jinja.json")
        let template = try ChatTemplate(source: try fixture.object("templates").string("llama3.1"))
        let call: JinjaValue = ["type": "function", "function": ["name": "now", "arguments": [:]]]
        let messages: [JinjaValue] = [
            ["role": "user", "content": "?"], ["role": "assistant", "tool_calls": [call, call]],
        ]
        XCTAssertThrowsError(try template.render(messageValues: messages, addGenerationPrompt: false)) { error in
            XCTAssertEqual(
                (error as? ChatTemplateError)?.message, "This model only supports single tool-calls at once!")
        }
    }

    func testStrftimeNowReadsTheGivenClock() throws {
        let template = try ChatTemplate(source: "{{ strftime_now('%d %b %Y') }}")
        XCTAssertEqual(
            try template.render(messages: [], addGenerationPrompt: false, now: ChatFixture.fixedNow), "26 Jul 2024")
    }
}

/// Reading the Python fixtures with key order kept (`JinjaValue(json:)`), and comparing outcomes.
enum ChatFixture {
    /// The clock the generator gives `strftime_now`: 2024-07-26 12:00 local time.
    static var fixedNow: Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone.current
        return calendar.date(from: DateComponents(year: 2024, month: 7, day: 26, hour: 12)) ?? Date()
    }

    static func load(_ path: String) throws -> JinjaValue {
        let data = try Data(contentsOf: TestFixtures.folder.appendingPathComponent(path))
        return try JinjaValue(json: String(decoding: data, as: UTF8.self))
    }

    /// Checks a render against a fixture case holding `expected` text or a Python `error`.
    static func check(
        _ outcome: Result<String, ChatTemplateError>, against testCase: JinjaValue, label: String,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        if let expected = testCase["expected"] {
            switch outcome {
            case .success(let text): assertSameText(text, try expected.text(), label, file: file, line: line)
            case .failure(let error): XCTFail("\(label): threw \(error)", file: file, line: line)
            }
            return
        }
        let pythonError = try testCase.object("error")
        let type = try pythonError.string("type")
        guard case .failure(let error) = outcome else {
            XCTFail("\(label): rendered, but Python raised \(type)", file: file, line: line)
            return
        }
        XCTAssertEqual(error.code, expectedCode(forPython: type), "\(label): \(error)", file: file, line: line)
        if type == "TemplateError" {
            XCTAssertEqual(error.message, try pythonError.string("message"), label, file: file, line: line)
        }
    }

    /// The error code for a Python exception raised while rendering.
    static func expectedCode(forPython type: String) -> ChatTemplateError.Code {
        switch type {
        case "TemplateError": return .raisedByTemplate
        case "UndefinedError": return .undefinedValue
        case "OverflowError", "RecursionError": return .limitExceeded
        default: return .invalidOperation
        }
    }

    /// Fails at the first differing scalar, with the text around it.
    static func assertSameText(
        _ actual: String, _ expected: String, _ label: String, file: StaticString = #filePath, line: UInt = #line
    ) {
        let a = Array(actual.unicodeScalars)
        let e = Array(expected.unicodeScalars)
        guard let index = firstDifference(a, e) else { return }
        func around(_ scalars: [Unicode.Scalar]) -> String {
            let window = scalars[max(0, index - 30)..<min(scalars.count, index + 30)]
            return String(String.UnicodeScalarView(window)).debugDescription
        }
        XCTFail(
            "\(label): first difference at scalar \(index) of \(a.count) (expected \(e.count)):\n"
                + "  got      \(around(a))\n  expected \(around(e))",
            file: file, line: line)
    }
}

struct FixtureShapeError: Error, CustomStringConvertible {
    let description: String
}

extension JinjaValue {
    subscript(key: String) -> JinjaValue? {
        guard case .object(let object) = self else { return nil }
        return object[key]
    }

    private func field(_ key: String) throws -> JinjaValue {
        guard let value = self[key] else { throw FixtureShapeError(description: "fixture has no '\(key)'") }
        return value
    }

    func text() throws -> String {
        guard case .string(let string) = self else { throw FixtureShapeError(description: "expected a string") }
        return string
    }

    func string(_ key: String) throws -> String { try field(key).text() }

    func bool(_ key: String) throws -> Bool {
        guard case .boolean(let flag) = try field(key) else {
            throw FixtureShapeError(description: "'\(key)' is not a bool")
        }
        return flag
    }

    func array(_ key: String) throws -> [JinjaValue] {
        guard case .array(let items) = try field(key) else {
            throw FixtureShapeError(description: "'\(key)' is not a list")
        }
        return items
    }

    func object(_ key: String) throws -> JinjaValue {
        let value = try field(key)
        guard case .object = value else { throw FixtureShapeError(description: "'\(key)' is not an object") }
        return value
    }

    /// An object's entries as template variables.
    var dictionary: [String: JinjaValue] {
        guard case .object(let object) = self else { return [:] }
        var result: [String: JinjaValue] = [:]
        for (key, value) in object.pairs { result[key] = value }
        return result
    }
}
