import Foundation
import LlamaDecoder

/// How tool calls are written in a conversation: the layout tool-calling ChatML models are trained
/// on (Hermes, Qwen 2.5), for every model. The tools are listed in the system message; a call is
///
///     <tool_call>
///     {"name": "getForecast", "arguments": {"city": "Paris"}}
///     </tool_call>
///
/// as the whole of an assistant turn; a tool's output comes back as a user turn wrapped in
/// `<tool_response>`. `package`: the chat endpoint of `embeddings serve` offers its clients' tools
/// the same way.
package enum ToolCalling {
    /// What opens a call, and what closes it.
    static let opening = "<tool_call>\n"
    static let closing = "\n</tool_call>"

    /// Which calls a turn may make: OpenAI's `tool_choice`.
    package enum Choice: Sendable, Equatable {
        /// The model chooses between text and a call.
        case automatic
        /// No call: text only (the tools are still listed).
        case none
        /// A call to one of the tools, no text.
        case required
        /// A call to the tool of this name, no text.
        case named(String)
    }

    /// The system message's section that lists `tools` and says how to call them.
    static func instructions(_ tools: [Transcript.ToolDefinition]) -> String {
        var text = """
            # Tools

            You may call one of the tools below when it helps you answer. To call one, reply with the call \
            alone, written exactly as:
            <tool_call>
            {"name": "<tool name>", "arguments": <the arguments, as JSON>}
            </tool_call>
            The tool's result comes back in a <tool_response> message; then answer with it in view.

            Tools:
            """
        for tool in tools {
            var function: [(String, GeneratedContent)] = [
                ("name", GeneratedContent(kind: .string(tool.name))),
                ("description", GeneratedContent(kind: .string(tool.description))),
            ]
            if tool.showsSchema { function.append(("parameters", tool.parameters.jsonSchema)) }
            let entry = GeneratedContent(
                kind: .structure(
                    properties: [
                        "type": GeneratedContent(kind: .string("function")),
                        "function": GeneratedContent(
                            kind: .structure(
                                properties: Dictionary(uniqueKeysWithValues: function),
                                orderedKeys: function.map(\.0))),
                    ], orderedKeys: ["type", "function"]))
            text += "\n" + entry.jsonString
        }
        return text
    }

    /// An assistant turn that makes `calls`, as the model writes it.
    static func text(of calls: Transcript.ToolCalls) -> String {
        calls.map { call in
            let name = GeneratedContent(kind: .string(call.toolName)).jsonString
            return opening + "{\"name\": \(name), \"arguments\": \(call.arguments.jsonString)}" + closing
        }.joined(separator: "\n")
    }

    /// A tool's output (its text) as the model reads it (a user turn).
    static func response(_ content: String) -> String {
        "<tool_response>\n\(content)\n</tool_response>"
    }

    /// The schema of a call to one of `tools`: an object with the tool's `name` and its `arguments`.
    static func callSchema(_ tools: [Transcript.ToolDefinition]) -> GenerationSchema {
        let calls = tools.map { tool in
            SchemaNode.object(
                name: "call_\(tool.name)", description: nil,
                properties: [
                    SchemaProperty(
                        name: "name", description: nil, node: .string(description: nil, rules: [.anyOf([tool.name])]),
                        isOptional: false),
                    SchemaProperty(name: "arguments", description: nil, node: tool.parameters.root, isOptional: false),
                ])
        }
        // Named shapes are shared by name; `conflict(in:)` refuses tools whose shapes of one name differ.
        let definitions = tools.reduce(into: [String: SchemaNode]()) {
            $0.merge($1.parameters.definitions) { kept, _ in kept }
        }
        return GenerationSchema(
            root: calls.count == 1 ? calls[0] : .anyOf(name: "ToolCall", description: nil, calls),
            definitions: definitions)
    }

    /// The first name two of `tools` give to different argument shapes (in their definitions),
    /// or nil: calls to them cannot share one grammar.
    package static func conflict(in tools: [Transcript.ToolDefinition]) -> String? {
        var seen: [String: SchemaNode] = [:]
        for tool in tools {
            for (name, node) in tool.parameters.definitions.sorted(by: { $0.key < $1.key }) {
                if let other = seen[name], other != node { return name }
                seen[name] = node
            }
        }
        return nil
    }

    /// `text` without the blanks (spaces, newlines) a turn may start with before a call.
    static func droppingLeadingBlanks(_ text: String) -> Substring {
        text.drop { $0 == " " || $0 == "\n" }
    }

    /// Whether `text` may still become a call, or is one: its blanks, then a prefix of the
    /// opening or the opening and more.
    static func mayBeCall(_ text: String) -> Bool {
        let rest = droppingLeadingBlanks(text)
        return rest.hasPrefix(opening) || opening.hasPrefix(rest)
    }

    /// The calls in a turn's text (blanks, `opening`, then the call's JSON), or nil when it is
    /// not a call.
    /// - Throws: `.decodingFailure` when the JSON is not a whole call.
    static func calls(in text: String) throws(LanguageModelSession.GenerationError) -> Transcript.ToolCalls? {
        let rest = droppingLeadingBlanks(text)
        guard rest.hasPrefix(opening) else { return nil }
        let json = String(rest.dropFirst(opening.count))
        // A map among the arguments may repeat a key (the grammar does not remember keys): the last value counts.
        guard let content = try? GeneratedContent(generatedJSON: json), content.isComplete,
            case .structure(let properties, _) = content.kind, case .string(let name)? = properties["name"]?.kind,
            let arguments = properties["arguments"]
        else {
            throw .decodingFailure(.init(debugDescription: "the tool call is not whole: \(json.prefix(200))"))
        }
        let id = "call_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(24).lowercased()
        return Transcript.ToolCalls([Transcript.ToolCall(id: id, toolName: name, arguments: arguments)])
    }
}

/// The `TokenConstraint` of a turn that may call tools: while the response is still a prefix of
/// `<tool_call>\n`, either way stays open (the call, or the answer: free text or a value of the
/// answer's grammar); once the opening is whole, the call's JSON is generated under the tools'
/// schemas and the turn ends with it; once the response leaves the opening, the answer goes on
/// (under its grammar, if any). A required call is the only way; a forbidden one is never
/// opened (the tools are listed, and a model would otherwise write the call as text). The turn
/// may start with a few blanks (spaces, newlines) before the opening; a call is only made, or
/// masked out, at the start of a turn: text that has begun as an answer is not watched further.
final class ToolCallConstraint: TokenConstraint {
    private enum Phase {
        /// The response so far is `blanks` blanks, then the first `matched` bytes of the opening.
        case opening(matched: Int, blanks: Int)
        case call(GuidedDecoding)
        /// An answer: free text (nil) or guided.
        case answer(GuidedDecoding?)
    }

    private let opening = Array(ToolCalling.opening.utf8)
    private let callGrammar: JSONGrammar
    private let answerGrammar: JSONGrammar?
    /// Whether the turn may, must or must not call.
    enum Mode {
        case optional, required, forbidden
    }
    private let mode: Mode
    private let model: LlamaModel
    private var phase = Phase.opening(matched: 0, blanks: 0)
    /// The most blanks a turn may start with before a call's opening.
    private static let maximumBlanks = 4

    init(callGrammar: JSONGrammar, answerGrammar: JSONGrammar?, mode: Mode, model: LlamaModel) {
        self.callGrammar = callGrammar
        self.answerGrammar = answerGrammar
        self.mode = mode
        self.model = model
        // JSON cannot start with `<`: a forbidden call under an answer grammar is just the answer.
        if mode == .forbidden, let answerGrammar {
            phase = .answer(GuidedDecoding(grammar: answerGrammar, model: model))
        }
    }

    /// Whether the turn is a call (its opening whole).
    var isCall: Bool {
        if case .call = phase { return true }
        return false
    }

    /// Whether the response so far is whole: a whole call, or an answer its grammar accepts.
    var isComplete: Bool {
        switch phase {
        case .opening: return mode != .required && answerGrammar == nil
        case .call(let decoding): return decoding.isComplete
        case .answer(let decoding): return decoding?.isComplete ?? true
        }
    }

    var isFinished: Bool {
        switch phase {
        case .opening: return false
        case .call(let decoding): return decoding.isFinished
        case .answer(let decoding): return decoding?.isFinished ?? false
        }
    }

    /// Where `bytes` lead from `matched` bytes of the opening: still opening, into the call (its
    /// grammar's state), into the answer (its grammar's state, nil for free text), or nowhere.
    private enum Step {
        case opening(Int, blanks: Int)
        case call(JSONGrammar.State)
        case answer(JSONGrammar.State?)
        case refused
    }

    private func step(from matched: Int, blanks: Int, _ bytes: ArraySlice<UInt8>) -> Step {
        var matched = matched
        var blanks = blanks
        var index = bytes.startIndex
        // Blanks before the opening (not under an answer grammar: JSON starts at once).
        while answerGrammar == nil || mode == .required, index < bytes.endIndex, matched == 0,
            blanks < Self.maximumBlanks, bytes[index] == 0x20 || bytes[index] == 0x0A
        {
            blanks += 1
            index += 1
        }
        while index < bytes.endIndex, matched < opening.count, bytes[index] == opening[matched] {
            matched += 1
            index += 1
        }
        // A forbidden call is not even named: `<tool_call` is refused (the markup without the
        // newline would still read as a call).
        if mode == .forbidden, matched >= opening.count - 1 { return .refused }
        if matched == opening.count {
            let state = callGrammar.advance(callGrammar.initialState, bytes[index...])
            return state.isDead ? .refused : .call(state)
        }
        if index == bytes.endIndex { return .opening(matched, blanks: blanks) }
        guard mode != .required else { return .refused }
        guard let answerGrammar else { return .answer(nil) }
        let state = answerGrammar.advance(
            answerGrammar.advance(answerGrammar.initialState, opening[..<matched]), bytes[index...])
        return state.isDead ? .refused : .answer(state)
    }

    func mask(_ logits: UnsafeMutableBufferPointer<Float>) -> Bool {
        switch phase {
        case .call(let decoding): return decoding.mask(logits)
        case .answer(let decoding?): return decoding.mask(logits)
        case .answer(nil): return logits.contains { $0 > -.infinity }
        case .opening(let matched, let blanks):
            let tokenizer = model.tokenizer
            var any = false
            for id in 0..<logits.count {
                let allowed: Bool
                if id >= tokenizer.vocabularySize {
                    allowed = false
                } else if model.stopTokenIDs.contains(id) {
                    // Ending here leaves a free answer (possibly "<tool", which is text).
                    allowed = mode != .required && answerGrammar == nil
                } else if tokenizer.isControl(id) {
                    allowed = false
                } else {
                    let bytes = tokenizer.bytes(for: id)
                    if case .refused = step(from: matched, blanks: blanks, bytes) {
                        allowed = false
                    } else {
                        allowed = !bytes.isEmpty
                    }
                }
                if allowed { any = any || logits[id] > -.infinity } else { logits[id] = -.infinity }
            }
            return any
        }
    }

    func accept(_ token: Int) {
        switch phase {
        case .call(let decoding): decoding.accept(token)
        case .answer(let decoding): decoding?.accept(token)
        case .opening(let matched, let blanks):
            guard !model.stopTokenIDs.contains(token) else { return }
            switch step(from: matched, blanks: blanks, model.tokenizer.bytes(for: token)) {
            case .opening(let now, let blanks): phase = .opening(matched: now, blanks: blanks)
            case .call(let state):
                let decoding = GuidedDecoding(grammar: callGrammar, model: model)
                decoding.start(at: state)
                phase = .call(decoding)
            case .answer(let state):
                guard let state, let answerGrammar else {
                    phase = .answer(nil)
                    return
                }
                let decoding = GuidedDecoding(grammar: answerGrammar, model: model)
                decoding.start(at: state)
                phase = .answer(decoding)
            case .refused:
                // Masked out; reached only if a caller samples outside the mask.
                phase = .answer(nil)
            }
        }
    }
}
