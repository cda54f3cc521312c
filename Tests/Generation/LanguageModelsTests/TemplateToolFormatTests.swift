import Foundation
import LinearAlgebra
import LlamaDecoder
import ModelTestSupport
import Synchronization
import TestSupport
import XCTest

@testable import LanguageModels

/// Tool calls through the chat template's own tool support: which format each template teaches,
/// the history a session writes equal to transformers' rendering of the same conversation, and a
/// round trip (a call forced by the grammar, the tool run, its output in the template's role)
/// with Qwen2.5's and Llama 3.1's templates over the real default model.
final class TemplateToolFormatTests: XCTestCase {
    /// The templates of `Fixtures/generation/chat-template-sources.json`, by name.
    static let sources = Result { () throws -> [String: String] in
        let url = TestFixtures.folder.appendingPathComponent("generation/chat-template-sources.json")
        let root = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any]
        let templates = try XCTUnwrap(root?["templates"] as? [[String: Any]])
        return Dictionary(
            uniqueKeysWithValues: templates.compactMap { entry in
                (entry["name"] as? String).flatMap { name in (entry["source"] as? String).map { (name, $0) } }
            })
    }

    func testEachTemplateTeachesItsFormat() throws {
        let sources = try Self.sources.get()
        let expected: [String: ToolCalling.Format] = [
            "qwen2.5-instruct": .qwen, "qwen3": .qwen, "llama-3.1-instruct": .llama3, "llama-3.2-instruct": .llama3,
            "llama-3-instruct": .hermes, "gemma-2-it": .hermes, "gemma-3-it": .hermes,
            "phi-3.5-mini-instruct": .hermes, "mistral-7b-instruct-v0.3": .mistral,
        ]
        for (name, format) in expected {
            XCTAssertEqual(ToolCalling.Format(templateSource: try XCTUnwrap(sources[name], name)), format, name)
        }
        XCTAssertEqual(ToolCalling.Format(templateSource: nil), .hermes)
        // The default model's ChatML template has no tool support.
        XCTAssertEqual(ToolCalling.Format(templateSource: try TestLanguageModel.shared().chatTemplateSource), .hermes)
    }

    /// A transcript with a call and its output, laid out through a template with tool support,
    /// is what transformers renders for the same messages (the golden `tool_call_round_trip`
    /// conversation of chat-templates.json), from the user's question on. (The tools' listing is
    /// checked apart: the fixture stores their JSON keys sorted, a session writes them in order.)
    func testHistoryEqualsTransformers() throws {
        let url = TestFixtures.folder.appendingPathComponent("generation/chat-templates.json")
        let root = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let cases = try XCTUnwrap(root["cases"] as? [[String: Any]])
        let tool = Transcript.ToolDefinition(
            name: "get_weather", description: "Get the current weather in a city.",
            parameters: GenerationSchema(
                type: GeneratedContent.self,
                properties: [.init(name: "location", type: String.self), .init(name: "unit", type: String?.self)]))
        let entries: [Transcript.Entry] = [
            .instructions(.init(segments: [.text(.init(content: "You are a weather bot."))], toolDefinitions: [tool])),
            .prompt(.init(segments: [.text(.init(content: "What's the weather in Paris?"))])),
            .toolCalls(
                Transcript.ToolCalls([
                    .init(
                        id: "callParis", toolName: "get_weather",
                        arguments: try GeneratedContent(json: #"{"location": "Paris, France", "unit": "celsius"}"#))
                ])),
            .toolOutput(
                .init(
                    id: "callParis", toolName: "get_weather",
                    segments: [.text(.init(content: #"{"temperature": 18, "condition": "cloudy"}"#))])),
        ]
        var checked = 0
        for (name, question) in [
            ("qwen2.5-instruct", "What's the weather in Paris?<|im_end|>\n"),
            ("qwen3", "What's the weather in Paris?<|im_end|>\n"),
            ("llama-3.1-instruct", "What's the weather in Paris?<|eot_id|>"),
            ("llama-3.2-instruct", "What's the weather in Paris?<|eot_id|>"),
            ("mistral-7b-instruct-v0.3", "What's the weather in Paris?[/INST]"),
        ] {
            let golden = try XCTUnwrap(
                cases.first {
                    $0["template"] as? String == name && $0["conversation"] as? String == "tool_call_round_trip"
                        && $0["add_generation_prompt"] as? Bool == false
                }, name)
            var expected = try XCTUnwrap(golden["rendered"] as? String)
            if name.hasPrefix("mistral") {
                // Mistral's template writes the call's whole `function` object with `tojson`, and
                // the fixture's messages had their keys sorted; a session writes OpenAI's order.
                // Its `</s>` is the test model's end token here.
                let sorted = #"{"arguments": {"location": "Paris, France", "unit": "celsius"}, "name": "get_weather""#
                XCTAssertTrue(expected.contains(sorted) && expected.contains("]</s>[TOOL_RESULTS]"), expected)
                expected = expected.replacingOccurrences(
                    of: sorted,
                    with: #"{"name": "get_weather", "arguments": {"location": "Paris, France", "unit": "celsius"}"#
                ).replacingOccurrences(of: "]</s>[TOOL_RESULTS]", with: "]<|im_end|>[TOOL_RESULTS]")
            }
            let template = try XCTUnwrap(try Self.sources.get()[name])
            let withTemplate = try LlamaModel(
                contentsOf: try TestLanguageModel.file(), threadCount: 1, chatTemplate: template)
            let prompt = try LanguageModelSession.prompt(
                entries, tools: [tool], model: withTemplate, addGenerationPrompt: false)
            let ours = try XCTUnwrap(prompt.text.range(of: question), "\(name): \(prompt.text)")
            let theirs = try XCTUnwrap(expected.range(of: question), name)
            XCTAssertEqual(String(prompt.text[ours.lowerBound...]), String(expected[theirs.lowerBound...]), name)
            // The tool is listed in the template's own way, with its schema.
            let listing = String(prompt.text[..<ours.lowerBound])
            XCTAssertTrue(listing.contains("\"name\": \"get_weather\""), "\(name): \(listing)")
            XCTAssertTrue(listing.contains("\"location\""), "\(name): \(listing)")
            XCTAssertFalse(listing.contains("# Tools\n\nYou may call one of the tools below"), name)
            checked += 1
        }
        XCTAssertEqual(checked, 5)
    }

    /// A tool that records its calls.
    struct Lookup: Tool {
        let name = "lookupCapital"
        let description = "The capital city of a country"
        let recorder = Recorder()

        struct Arguments: Generable, Codable, Equatable {
            var country: String
            static var generationSchema: GenerationSchema {
                GenerationSchema(
                    type: Self.self,
                    properties: [.init(name: "country", type: String.self, guides: [.pattern("[A-Z][a-z]{2,10}")])])
            }
        }

        final class Recorder: Sendable {
            let calls = Mutex<[Arguments]>([])
        }

        func call(arguments: Arguments) async throws -> String {
            recorder.calls.withOrderedLock { $0.append(arguments) }
            return "The capital of \(arguments.country) is Paris"
        }
    }

    /// A call forced by the grammar goes out in the template's format, is parsed back, runs the
    /// tool, and the next prompt shows the call and the output the way the template writes them.
    /// (SmolLM2's vocabulary has no `[TOOL_CALLS]` token: under Mistral's template the model
    /// spells it out; `testControlTokenOpening` covers the token.)
    func testRoundTripThroughQwenLlama31AndMistralTemplates() async throws {
        for (name, call, output) in [
            (
                "qwen2.5-instruct", "<tool_call>\n{\"name\": \"lookupCapital\", \"arguments\": {\"country\": \"",
                "<|im_start|>user\n<tool_response>\nThe capital of "
            ),
            (
                "llama-3.1-instruct", "{\"name\": \"lookupCapital\", \"parameters\": {\"country\": \"",
                "<|start_header_id|>ipython<|end_header_id|>\n\n\"The capital of "
            ),
            (
                "mistral-7b-instruct-v0.3",
                "[TOOL_CALLS] [{\"name\": \"lookupCapital\", \"arguments\": {\"country\": \"",
                "[TOOL_RESULTS] {\"content\": The capital of "
            ),
        ] {
            let template = try XCTUnwrap(try Self.sources.get()[name])
            let model = SystemLanguageModel(contentsOf: try TestLanguageModel.file(), chatTemplate: template)
            let tool = Lookup()
            let session = LanguageModelSession(model: model, tools: [tool], instructions: "Answer with the tools.")
            session.toolChoice = .required
            let response = try await session.respond(
                to: "What is the capital of France?",
                options: GenerationOptions(sampling: .greedy, maximumResponseTokens: 48))
            let calls = tool.recorder.calls.withOrderedLock { $0 }
            XCTAssertEqual(calls.count, LanguageModelSession.maximumToolRounds, name)
            for arguments in calls {
                XCTAssertNotNil(arguments.country.wholeMatch(of: /[A-Z][a-z]{2,10}/), "\(name): \(arguments.country)")
            }
            let entries = Array(session.transcript)
            guard case .toolCalls(let made) = entries[2], case .toolOutput(let result) = entries[3] else {
                return XCTFail("\(name): \(entries)")
            }
            XCTAssertEqual(made[0].toolName, "lookupCapital", name)
            XCTAssertEqual(result.id, made[0].id, name)
            if name.hasPrefix("mistral") {
                XCTAssertNotNil(made[0].id.wholeMatch(of: /[0-9a-z]{9}/), made[0].id)
            }
            XCTAssertNil(try ToolCalling.Format(templateSource: template).calls(in: response.content), name)
            // The history as the template writes it: the call in its format, the output in its role.
            let prompt = try LanguageModelSession.prompt(
                entries, tools: session.toolDefinitions, model: try model.model(), addGenerationPrompt: true)
            XCTAssertTrue(prompt.text.contains(call), "\(name): \(prompt.text)")
            XCTAssertTrue(prompt.text.contains(output), "\(name): \(prompt.text)")
        }
    }

    /// A format whose opening starts with a control token (Mistral's `[TOOL_CALLS]`): the token
    /// opens the call as one token, and the call reads back from text that does not print it.
    /// SmolLM2's `<|im_start|>` (a control token) stands in for `[TOOL_CALLS]`.
    func testControlTokenOpening() throws {
        let model = try TestLanguageModel.shared()
        let marker = try XCTUnwrap(model.tokenizer.id(for: "<|im_start|>"))
        XCTAssertTrue(model.tokenizer.isControl(marker))
        let format = ToolCalling.Format(
            name: "marked", usesTemplate: true, opening: "<|im_start|> [", marker: "<|im_start|>", closing: "]")
        let tool = Transcript.ToolDefinition(
            name: "f", description: "d",
            parameters: GenerationSchema(type: GeneratedContent.self, properties: [.init(name: "a", type: Int.self)]))
        let grammar = try JSONGrammar(format.callSchema([tool]))
        var logits = [Float](repeating: 0, count: model.tokenizer.vocabularySize)
        func allowed(_ constraint: ToolCallConstraint) -> Set<Int> {
            logits = [Float](repeating: 0, count: logits.count)
            _ = logits.withUnsafeMutableBufferPointer { constraint.mask($0) }
            return Set(logits.indices.filter { logits[$0] > -.infinity })
        }
        let required = ToolCallConstraint(
            callGrammar: grammar, answerGrammar: nil, mode: .required, model: model, format: format)
        XCTAssertTrue(allowed(required).contains(marker))
        required.accept(marker)
        XCTAssertFalse(required.isCall)
        // After the token, only what goes on with " [" (or " " first).
        let next = allowed(required)
        XCTAssertFalse(next.isEmpty)
        XCTAssertFalse(next.contains(marker))
        for id in next {
            let text = String(decoding: model.tokenizer.bytes(for: id), as: UTF8.self)
            XCTAssertTrue(" [{\"".hasPrefix(text) || text.hasPrefix(" [{\""), text)
        }
        let pieces = model.tokenizer.encode(" [", parsingControlTokens: false).map(\.id)
        XCTAssertFalse(pieces.isEmpty)
        for id in pieces {
            XCTAssertTrue(allowed(required).contains(id), "\(id)")
            required.accept(id)
        }
        XCTAssertTrue(required.isCall)
        // A forbidden call never opens with the token.
        let forbidden = ToolCallConstraint(
            callGrammar: grammar, answerGrammar: nil, mode: .forbidden, model: model, format: format)
        XCTAssertFalse(allowed(forbidden).contains(marker))
        // The text of such a call does not show the token.
        let text = "[{\"name\": \"f\", \"arguments\": {\"a\": 3}}]"
        XCTAssertNil(try format.calls(in: text), "an answer, unless the constraint saw the opening")
        let calls = try XCTUnwrap(format.calls(in: text, opened: true))
        XCTAssertEqual(calls[0].toolName, "f")
        XCTAssertEqual(calls[0].arguments.jsonString, #"{"a":3}"#)
        XCTAssertTrue(format.mayBeCall(""))
        XCTAssertTrue(format.mayBeCall(" ["))
    }

    /// Mistral's ids: a new call gets nine alphanumerics; a client's id of another shape is
    /// mapped to nine, the same for the call and its output.
    func testMistralCallIDs() throws {
        XCTAssertNotNil(ToolCalling.Format.mistral.newCallID().wholeMatch(of: /[0-9a-z]{9}/))
        XCTAssertNotNil(ToolCalling.Format.qwen.newCallID().wholeMatch(of: /call_[0-9a-f]{24}/))
        let mapped = ToolCalling.Format.mistral.templateID("call_abc")
        XCTAssertNotNil(mapped.wholeMatch(of: /[0-9a-z]{9}/))
        XCTAssertEqual(mapped, ToolCalling.Format.mistral.templateID("call_abc"))
        XCTAssertNotEqual(mapped, ToolCalling.Format.mistral.templateID("call_abd"))
        XCTAssertEqual(ToolCalling.Format.mistral.templateID("callParis"), "callParis")
        XCTAssertEqual(ToolCalling.Format.qwen.templateID("call_abc"), "call_abc")
    }

    /// The call's text in each format, and what is not a call.
    func testParsingEachFormat() throws {
        let qwen = try XCTUnwrap(
            ToolCalling.Format.qwen.calls(
                in: "\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>"))
        XCTAssertEqual(qwen[0].toolName, "f")
        XCTAssertEqual(qwen[0].arguments.jsonString, #"{"a":1}"#)
        let llama = try XCTUnwrap(ToolCalling.Format.llama3.calls(in: "{\"name\": \"f\", \"parameters\": {\"a\": 2}}"))
        XCTAssertEqual(llama[0].toolName, "f")
        XCTAssertEqual(llama[0].arguments.jsonString, #"{"a":2}"#)
        XCTAssertNil(try ToolCalling.Format.llama3.calls(in: "The answer is 4."))
        XCTAssertTrue(ToolCalling.Format.llama3.mayBeCall("{\"na"))
        XCTAssertFalse(ToolCalling.Format.llama3.mayBeCall("{\"city\""))
        let mistral = try XCTUnwrap(
            ToolCalling.Format.mistral.calls(in: "[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {\"a\": 4}}]"))
        XCTAssertEqual(mistral[0].toolName, "f")
        XCTAssertEqual(mistral[0].arguments.jsonString, #"{"a":4}"#)
        XCTAssertNil(try ToolCalling.Format.mistral.calls(in: "The answer is 4."))
        // A Llama call must name its arguments `parameters`.
        XCTAssertThrowsError(try ToolCalling.Format.llama3.calls(in: "{\"name\": \"f\", \"arguments\": {}}"))
    }
}
