import Foundation
import LinearAlgebra
import LlamaDecoder
import ModelTestSupport
import Synchronization
import TestSupport
import XCTest

@testable import LanguageModels

/// Tools over the real default model: calls whose arguments always decode, outputs in the
/// transcript and in front of the model, failures as `ToolCallError`, bounded rounds, the prompt
/// layout, and transcripts with tool entries that survive encoding.
final class ToolTests: XCTestCase {
    /// A tool that records its calls.
    struct Forecast: Tool {
        let name = "getForecast"
        let description = "The weather forecast for a city"
        let recorder = Recorder()
        var fails = false

        struct Arguments: Generable, Codable, Equatable {
            var city: String
            var days: Int
            static var generationSchema: GenerationSchema {
                GenerationSchema(
                    type: Self.self,
                    properties: [
                        .init(name: "city", type: String.self, guides: [.pattern("[A-Z][a-z]{2,12}")]),
                        .init(name: "days", type: Int.self, guides: [.range(1...7)]),
                    ])
            }
        }

        struct Unavailable: Error {}

        final class Recorder: Sendable {
            let calls = Mutex<[Arguments]>([])
        }

        func call(arguments: Arguments) async throws -> String {
            recorder.calls.withOrderedLock { $0.append(arguments) }
            if fails { throw Unavailable() }
            return "Sunny and 21 degrees in \(arguments.city) for \(arguments.days) days"
        }
    }

    static let model = Result { () throws -> SystemLanguageModel in
        SystemLanguageModel(contentsOf: try TestLanguageModel.file())
    }

    /// A required call: the arguments follow the tool's schema, the tool runs once, its output is
    /// in the transcript between the call and the answer, and the answer's prompt shows it.
    func testRequiredCallRunsTheToolAndAnswersWithItsOutput() async throws {
        let tool = Forecast()
        let session = LanguageModelSession(
            model: try Self.model.get(), tools: [tool], instructions: "You answer questions about the weather.")
        session.toolChoice = .required
        // Required in every round but the last: the rounds are bounded, then the model answers.
        let response = try await session.respond(
            to: "What is the weather in Paris this week?",
            options: GenerationOptions(sampling: .greedy, maximumResponseTokens: 40))
        let calls = tool.recorder.calls.withOrderedLock { $0 }
        XCTAssertEqual(calls.count, LanguageModelSession.maximumToolRounds)
        for arguments in calls {
            XCTAssertNotNil(arguments.city.wholeMatch(of: /[A-Z][a-z]{2,12}/), arguments.city)
            XCTAssertTrue((1...7).contains(arguments.days), "\(arguments.days)")
        }
        let entries = Array(response.transcriptEntries)
        XCTAssertEqual(entries.count, 2 + 2 * LanguageModelSession.maximumToolRounds)
        guard case .prompt = entries.first, case .response(let answer) = entries.last else {
            return XCTFail("\(entries)")
        }
        XCTAssertEqual(answer.segments, [.text(.init(id: answer.segments[0].id, content: response.content))])
        for round in 0..<LanguageModelSession.maximumToolRounds {
            guard case .toolCalls(let made) = entries[1 + 2 * round],
                case .toolOutput(let output) = entries[2 + 2 * round]
            else { return XCTFail("round \(round): \(entries[1 + 2 * round])") }
            XCTAssertEqual(made.count, 1)
            XCTAssertEqual(made[0].toolName, "getForecast")
            XCTAssertEqual(output.id, made[0].id)
            XCTAssertEqual(try Forecast.Arguments(made[0].arguments), calls[round])
            XCTAssertTrue(Transcript.Entry.toolOutput(output).text.hasPrefix("Sunny and 21 degrees in "))
        }
        XCTAssertFalse(response.content.contains("<tool_call>"), response.content)
        XCTAssertEqual(Array(session.transcript.dropFirst()), entries)
        // The last turn's prompt shows every call and output, in the model's layout.
        let rendered = ToolCalling.hermesMessages(
            Array(Array(session.transcript).dropLast()), tools: session.toolDefinitions)
        XCTAssertEqual(rendered.first?.role, .system)
        XCTAssertTrue(rendered[0].content.hasPrefix("You answer questions about the weather.\n\n# Tools"))
        XCTAssertTrue(rendered[0].content.contains(#""name":"getForecast""#), rendered[0].content)
        let assistant = rendered.filter { $0.role == .assistant }
        XCTAssertEqual(assistant.count, LanguageModelSession.maximumToolRounds)
        XCTAssertTrue(assistant[0].content.hasPrefix("<tool_call>\n{\"name\": \"getForecast\", \"arguments\": {"))
        XCTAssertTrue(assistant[0].content.hasSuffix("}\n</tool_call>"))
        XCTAssertTrue(rendered.last?.content.hasPrefix("<tool_response>\nSunny and 21 degrees") ?? false)
    }

    /// Arguments are generated under the tool's schema at any temperature: every call decodes.
    /// (A hot sample may spell a string with escapes and run past the per-turn budget: that
    /// response ends with `.decodingFailure`, never with a call that does not decode.)
    func testArgumentsAlwaysDecodeWhenSampled() async throws {
        let tool = Forecast()
        var cutShort = 0
        for seed in 0..<2 {
            let session = LanguageModelSession(model: try Self.model.get(), tools: [tool])
            session.toolChoice = .named("getForecast")
            do {
                _ = try await session.respond(
                    to: "Plan a trip with a forecast.",
                    options: GenerationOptions(
                        sampling: .random(top: 1000, seed: UInt64(seed)), temperature: 1.5, maximumResponseTokens: 64))
            } catch LanguageModelSession.GenerationError.decodingFailure(let context) {
                XCTAssertTrue(context.debugDescription.contains("not whole"), context.debugDescription)
                cutShort += 1
            }
            XCTAssertFalse(session.isResponding)
        }
        let calls = tool.recorder.calls.withOrderedLock { $0 }
        XCTAssertGreaterThanOrEqual(calls.count, 4, "\(cutShort) responses cut short")
        for arguments in calls {
            XCTAssertNotNil(arguments.city.wholeMatch(of: /[A-Z][a-z]{2,12}/), arguments.city)
            XCTAssertTrue((1...7).contains(arguments.days), "\(arguments.days)")
        }
        // A budget too small for the call: a typed error, and the transcript as it was.
        let session = LanguageModelSession(model: try Self.model.get(), tools: [tool])
        session.toolChoice = .required
        do {
            try await session.respond(to: "Forecast?", options: GenerationOptions(maximumResponseTokens: 6))
            XCTFail("a whole call in 6 tokens")
        } catch LanguageModelSession.GenerationError.decodingFailure(let context) {
            XCTAssertTrue(context.debugDescription.contains("not whole"), context.debugDescription)
        }
        XCTAssertEqual(session.transcript.count, 1)
        for arguments in calls {
            XCTAssertNotNil(arguments.city.wholeMatch(of: /[A-Z][a-z]{2,12}/), arguments.city)
            XCTAssertTrue((1...7).contains(arguments.days), "\(arguments.days)")
        }
    }

    /// A tool that throws ends the response with `ToolCallError`; the transcript is unchanged.
    func testFailingToolIsToolCallError() async throws {
        var tool = Forecast()
        tool.fails = true
        let session = LanguageModelSession(model: try Self.model.get(), tools: [tool], instructions: "Be brief.")
        session.toolChoice = .required
        do {
            try await session.respond(to: "Weather in Oslo?")
            XCTFail("no error")
        } catch let error as LanguageModelSession.ToolCallError {
            XCTAssertEqual(error.tool.name, "getForecast")
            XCTAssertTrue(error.underlyingError is Forecast.Unavailable, "\(error.underlyingError)")
            XCTAssertTrue(error.description.contains("getForecast"), error.description)
        }
        XCTAssertEqual(tool.recorder.calls.withOrderedLock { $0.count }, 1)
        XCTAssertEqual(session.transcript.count, 1)
        XCTAssertFalse(session.isResponding)
    }

    /// Left to itself the model answers in text or calls the tool; either way the response is
    /// text, never a call's markup, and any call decoded.
    func testAutomaticChoiceEndsInText() async throws {
        let tool = Forecast()
        let session = LanguageModelSession(
            model: try Self.model.get(), tools: [tool],
            instructions: "Call getForecast for any question about the weather.")
        let response = try await session.respond(
            to: "What will the weather be in Rome tomorrow?",
            options: GenerationOptions(sampling: .greedy, maximumResponseTokens: 40))
        XCTAssertFalse(response.content.hasPrefix("<tool_call>\n"), response.content)
        let made = response.transcriptEntries.filter { if case .toolCalls = $0 { true } else { false } }.count
        XCTAssertEqual(made, tool.recorder.calls.withOrderedLock { $0.count })
    }

    /// A turn for a client that runs its tools itself: a required call is returned, not run, and
    /// appended to the transcript; a forbidden one leaves text; the text callback never sees a call.
    func testNextTurnReturnsCallsWithoutRunningThem() async throws {
        let tool = Forecast()
        let definition = Transcript.ToolDefinition(tool: tool)
        let transcript = Transcript(entries: [
            .instructions(.init(segments: [.text(.init(content: "Be brief."))], toolDefinitions: [definition])),
            .prompt(.init(segments: [.text(.init(content: "Weather in Quito for 3 days?"))])),
        ])
        let session = LanguageModelSession(model: try Self.model.get(), transcript: transcript)
        let seen = Mutex<[String]>([])
        let turn = try await session.nextTurn(
            tools: [definition], choice: .named("getForecast"), schema: nil,
            options: GenerationOptions(sampling: .greedy, maximumResponseTokens: 40)
        ) { text in
            seen.withOrderedLock { $0.append(text) }
            return true
        }
        guard case .toolCalls(let calls) = turn.outcome else { return XCTFail("\(turn.outcome)") }
        XCTAssertEqual(calls.count, 1)
        XCTAssertEqual(calls[0].toolName, "getForecast")
        XCTAssertNoThrow(try Forecast.Arguments(calls[0].arguments))
        XCTAssertEqual(tool.recorder.calls.withOrderedLock { $0.count }, 0)
        XCTAssertEqual(seen.withOrderedLock { $0 }, [])
        XCTAssertGreaterThan(turn.promptTokens, 20)
        XCTAssertEqual(session.transcript.count, 3)
        guard case .toolCalls = session.transcript.last else { return XCTFail("\(session.transcript)") }

        let plain = LanguageModelSession(model: try Self.model.get(), transcript: transcript)
        let text = try await plain.nextTurn(
            tools: [definition], choice: .none, schema: nil,
            options: GenerationOptions(sampling: .greedy, maximumResponseTokens: 8)
        ) { _ in true }
        guard case .text(let answer) = text.outcome else { return XCTFail("\(text.outcome)") }
        XCTAssertFalse(answer.hasPrefix("<tool_call"), answer)
        XCTAssertEqual(text.completionTokens, 8)
        XCTAssertTrue(text.reachedTokenLimit)
    }

    /// Transcripts with tools encode and decode to themselves; older ones without tool
    /// definitions still decode.
    func testTranscriptWithToolsRoundTrips() throws {
        let definition = Transcript.ToolDefinition(tool: Forecast())
        let transcript = Transcript(entries: [
            .instructions(.init(segments: [.text(.init(content: "Hi"))], toolDefinitions: [definition])),
            .prompt(.init(segments: [.text(.init(content: "Weather?"))])),
            .toolCalls(
                Transcript.ToolCalls([
                    .init(
                        id: "call_1", toolName: "getForecast",
                        arguments: try GeneratedContent(json: #"{"city": "Lima", "days": 2}"#))
                ])),
            .toolOutput(.init(id: "call_1", toolName: "getForecast", segments: [.text(.init(content: "Rain"))])),
            .response(.init(assetIDs: ["m"], segments: [.text(.init(content: "It rains."))])),
        ])
        let data = try JSONEncoder().encode(transcript)
        XCTAssertEqual(try JSONDecoder().decode(Transcript.self, from: data), transcript)
        let old = #"{"entries":[{"instructions":{"_0":{"id":"a","segments":[]}}}]}"#
        let decoded = try JSONDecoder().decode(Transcript.self, from: Data(old.utf8))
        guard case .instructions(let instructions) = decoded.first else { return XCTFail("\(decoded)") }
        XCTAssertEqual(instructions.toolDefinitions, [])
    }

    /// The call's constraint at random logits over the real vocabulary, for many seeds: every
    /// generated call is whole JSON that decodes under the schema of the tool it names.
    func testCallConstraintWithRandomLogits() throws {
        let model = try LanguageModelSession(model: Self.model.get()).model.model()
        let tools = [
            Transcript.ToolDefinition(tool: Forecast()),
            Transcript.ToolDefinition(
                name: "lookup", description: "Finds a word",
                parameters: GenerationSchema(
                    type: GeneratedContent.self,
                    properties: [
                        .init(name: "word", type: String.self), .init(name: "limit", type: Int?.self),
                    ])),
        ]
        let grammar = try JSONGrammar(ToolCalling.Format.hermes.callSchema(tools))
        var generator = SplitMix(seed: 7)
        var finished = 0
        for _ in 0..<60 {
            let constraint = ToolCallConstraint(callGrammar: grammar, answerGrammar: nil, mode: .required, model: model)
            var text = ""
            var logits = [Float](repeating: 0, count: model.tokenizer.vocabularySize)
            for _ in 0..<200 where !constraint.isFinished {
                for i in logits.indices { logits[i] = Float(generator.next() % 1000) / 100 }
                let any = logits.withUnsafeMutableBufferPointer { constraint.mask($0) }
                XCTAssertTrue(any)
                let token = logits.indices.max { logits[$0] < logits[$1] }!
                constraint.accept(token)
                text += String(decoding: model.tokenizer.bytes(for: token), as: UTF8.self)
            }
            // At most 4 blanks, then the opening.
            let blanks = text.prefix { $0 == " " || $0 == "\n" }.unicodeScalars.count
            XCTAssertLessThanOrEqual(blanks, 4, text)
            XCTAssertTrue(text.dropFirst(blanks).hasPrefix("<tool_call>\n") || !constraint.isFinished, text)
            guard constraint.isFinished else { continue }
            finished += 1
            let calls = try XCTUnwrap(ToolCalling.Format.hermes.calls(in: text))
            if calls[0].toolName == "getForecast" {
                let arguments = try Forecast.Arguments(calls[0].arguments)
                XCTAssertTrue((1...7).contains(arguments.days))
            } else {
                XCTAssertEqual(calls[0].toolName, "lookup")
                XCTAssertNotNil(try calls[0].arguments.value(String.self, forProperty: "word"))
            }
        }
        XCTAssertGreaterThan(finished, 20)
    }

    /// A forbidden call under an answer grammar never dead-ends (JSON starts at once), and a
    /// required call may start after a few blanks; at random logits over the real vocabulary.
    func testForbiddenCallUnderAGrammarAndBlanksBeforeACall() throws {
        let model = try LanguageModelSession(model: Self.model.get()).model.model()
        let tools = [Transcript.ToolDefinition(tool: Forecast())]
        let callGrammar = try JSONGrammar(ToolCalling.Format.hermes.callSchema(tools))
        let answer = try JSONGrammar(Forecast.Arguments.generationSchema)
        var generator = SplitMix(seed: 11)
        var logits = [Float](repeating: 0, count: model.tokenizer.vocabularySize)
        for _ in 0..<20 {
            let constraint = ToolCallConstraint(
                callGrammar: callGrammar, answerGrammar: answer, mode: .forbidden, model: model)
            var text = ""
            for _ in 0..<60 where !constraint.isFinished {
                for i in logits.indices { logits[i] = Float(generator.next() % 1000) / 100 }
                XCTAssertTrue(logits.withUnsafeMutableBufferPointer { constraint.mask($0) }, text)
                let token = logits.indices.max { logits[$0] < logits[$1] }!
                constraint.accept(token)
                text += String(decoding: model.tokenizer.bytes(for: token), as: UTF8.self)
            }
            XCTAssertTrue(text.hasPrefix("{\"city\": \""), text)
            XCTAssertFalse(constraint.isCall)
        }
        // Blanks, then the call: read as a call.
        let calls = try XCTUnwrap(
            ToolCalling.Format.hermes.calls(
                in: " \n<tool_call>\n{\"name\": \"getForecast\", \"arguments\": {\"city\": \"Oslo\", \"days\": 2}}"))
        XCTAssertEqual(calls[0].toolName, "getForecast")
        XCTAssertTrue(ToolCalling.Format.hermes.mayBeCall("\n<tool"))
        XCTAssertFalse(ToolCalling.Format.hermes.mayBeCall("Hello"))
        // Repeated keys in arguments (a map may write them): the last value counts.
        let repeated = try XCTUnwrap(
            ToolCalling.Format.hermes.calls(in: "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1, \"a\": 2}}"))
        XCTAssertEqual(repeated[0].arguments.jsonString, #"{"a":2}"#)
        // Two tools giving one definition name different shapes cannot share a grammar.
        let a = DynamicGenerationSchema(name: "A", properties: [.init(name: "x", schema: .init(referenceTo: "S"))])
        let s1 = DynamicGenerationSchema(name: "S", properties: [.init(name: "k", schema: .init(type: String.self))])
        let s2 = DynamicGenerationSchema(name: "S", properties: [.init(name: "k", schema: .init(type: Int.self))])
        let first = Transcript.ToolDefinition(
            name: "one", description: "", parameters: try GenerationSchema(root: a, dependencies: [s1]))
        let second = Transcript.ToolDefinition(
            name: "two", description: "", parameters: try GenerationSchema(root: a, dependencies: [s2]))
        XCTAssertEqual(ToolCalling.conflict(in: [first, second]), "S")
        XCTAssertNil(ToolCalling.conflict(in: [first, first]))
    }

}
