import ChatTemplates
import Foundation
import LlamaDecoder

/// How tool calls are written in a conversation: through the chat template's own tool support
/// where it has one, else in the layout tool-calling ChatML models are trained on (Hermes).
///
/// - A template that lists `tools` and writes `tool_calls` back (Qwen2.5, Qwen3, Llama 3.1/3.2)
///   gets the tools, the calls and the results as transformers' `apply_chat_template(tools=…)`
///   passes them, and the model's call is read in the format that template teaches: Qwen's
///   `<tool_call>` blocks, Llama 3.1's bare `{"name": …, "parameters": …}` object. A result goes
///   back as a `tool` message, which the template writes in its own role (`<tool_response>` in a
///   user turn for Qwen, `ipython` for Llama 3.1, `[TOOL_RESULTS]` for Mistral).
/// - Mistral v0.3's template (`[AVAILABLE_TOOLS]`, `[TOOL_CALLS]`, `[TOOL_RESULTS]`): the model
///   writes its `[TOOL_CALLS]` control token, then ` [{"name": …, "arguments": …}]`; call ids are
///   the nine alphanumerics the template insists on.
/// - Any other template (SmolLM2, Gemma, Phi-3) gets the Hermes layout written here: the tools
///   listed in the system message, a call as
///
///       <tool_call>
///       {"name": "getForecast", "arguments": {"city": "Paris"}}
///       </tool_call>
///
///   as the whole of an assistant turn, a tool's output as a user turn wrapped in `<tool_response>`.
///
/// `package`: the chat endpoint of `embeddings serve` offers its clients' tools the same way.
package enum ToolCalling {
    /// How one chat template's conversations carry tools, and how its model writes a call.
    package struct Format: Sendable, Equatable, CustomStringConvertible {
        /// The format's name: `hermes` (the fallback), `qwen`, `llama3`, `mistral`.
        package let name: String
        /// Whether the template itself lists the tools and writes calls and results back; false
        /// for the Hermes fallback, written as text by this type.
        let usesTemplate: Bool
        /// What opens a call.
        let opening: String
        /// The control token the opening starts with (Mistral's `[TOOL_CALLS]`), or nil. A
        /// vocabulary that has it as a control token writes it as that one token, which prints
        /// nothing in the response's text; one without it spells it out.
        let marker: String?
        /// Whether the opening is the start of the call's JSON (Llama 3.1's bare object) rather
        /// than markup before it.
        let openingIsJSON: Bool
        /// What may follow the call's JSON (`</tool_call>`, Mistral's `]`), or nil.
        let closing: String?
        /// The call's key for its arguments.
        let argumentsKey: String
        /// The length of the call ids the template accepts (Mistral: 9 alphanumerics), or nil for any.
        let callIDLength: Int?

        /// The Hermes layout, for templates without tool support.
        static let hermes = Format(name: "hermes", usesTemplate: false, opening: "<tool_call>\n", closing: closingTag)
        /// Qwen2.5's and Qwen3's templates: `<tool_call>\n{"name": …, "arguments": …}\n</tool_call>`.
        static let qwen = Format(name: "qwen", usesTemplate: true, opening: "<tool_call>\n", closing: closingTag)
        /// Llama 3.1's and 3.2's templates: the whole turn is `{"name": …, "parameters": …}`.
        static let llama3 = Format(
            name: "llama3", usesTemplate: true, opening: "{\"name\"", openingIsJSON: true, argumentsKey: "parameters")
        /// Mistral v0.3's template: `[TOOL_CALLS] [{"name": …, "arguments": …}]`, ids of 9 alphanumerics.
        static let mistral = Format(
            name: "mistral", usesTemplate: true, opening: "[TOOL_CALLS] [", marker: "[TOOL_CALLS]", closing: "]",
            callIDLength: 9)

        /// The format a chat template teaches, read from its source: a template that writes
        /// `tool_calls` back and lists `tools` in Qwen's or Llama 3.1's format; else Hermes.
        package init(templateSource: String?) {
            guard let source = templateSource, source.contains("tool_calls"), source.contains("tools") else {
                self = .hermes
                return
            }
            if source.contains("<tool_call>") {
                self = .qwen
            } else if source.contains("[TOOL_CALLS]") {
                self = .mistral
            } else if source.contains("ipython"), source.contains("parameters") {
                self = .llama3
            } else {
                self = .hermes
            }
        }

        init(
            name: String, usesTemplate: Bool, opening: String, marker: String? = nil, openingIsJSON: Bool = false,
            closing: String? = nil, argumentsKey: String = "arguments", callIDLength: Int? = nil
        ) {
            self.name = name
            self.usesTemplate = usesTemplate
            self.opening = opening
            self.marker = marker
            self.openingIsJSON = openingIsJSON
            self.closing = closing
            self.argumentsKey = argumentsKey
            self.callIDLength = callIDLength
        }

        package var description: String { name }

        /// What closes a `<tool_call>` block.
        static let closingTag = "</tool_call>"

        /// The chat messages (as template values) for `entries`, and the tools the template lists
        /// (nil when it lists none, or for Hermes, whose tools are in the system message).
        func conversation(_ entries: [Transcript.Entry], tools: [Transcript.ToolDefinition])
            -> (messages: [JinjaValue], tools: [JinjaValue]?)
        {
            guard usesTemplate else {
                return (ToolCalling.hermesMessages(entries, tools: tools).map(\.jinjaValue), nil)
            }
            let messages: [JinjaValue] = entries.map { entry in
                switch entry {
                case .instructions: return ChatMessage(role: .system, content: entry.promptText).jinjaValue
                case .prompt: return ChatMessage(role: .user, content: entry.promptText).jinjaValue
                case .response: return ChatMessage(role: .assistant, content: entry.promptText).jinjaValue
                case .toolCalls(let calls):
                    let made: [JinjaValue] = calls.map { call in
                        [
                            "id": .string(templateID(call.id)), "type": "function",
                            "function": [
                                "name": .string(call.toolName), "arguments": ToolCalling.value(call.arguments),
                            ],
                        ]
                    }
                    return ["role": "assistant", "content": "", "tool_calls": .array(made)]
                case .toolOutput(let output):
                    return [
                        "role": "tool", "content": .string(entry.promptText),
                        "tool_call_id": .string(templateID(output.id)),
                        "name": .string(output.toolName),
                    ]
                }
            }
            return (messages, tools.isEmpty ? nil : tools.map { ToolCalling.value(ToolCalling.definition($0)) })
        }

        /// The schema of a call to one of `tools`: an object with the tool's `name` and its
        /// arguments (under `argumentsKey`).
        func callSchema(_ tools: [Transcript.ToolDefinition]) -> GenerationSchema {
            let calls = tools.map { tool in
                SchemaNode.object(
                    name: "call_\(tool.name)", description: nil,
                    properties: [
                        SchemaProperty(
                            name: "name", description: nil,
                            node: .string(description: nil, rules: [.anyOf([tool.name])]),
                            isOptional: false),
                        SchemaProperty(
                            name: argumentsKey, description: nil, node: tool.parameters.root, isOptional: false),
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

        /// The openings a response's text may show: the opening, and for a format whose opening
        /// starts with a control token, the rest of it (the token prints nothing), from its first
        /// non-blank character.
        private var printedOpenings: [Substring] {
            guard let marker, opening.hasPrefix(marker) else { return [Substring(opening)] }
            return [Substring(opening), ToolCalling.droppingLeadingBlanks(String(opening.dropFirst(marker.count)))]
        }

        /// Whether `text` may still become a call, or is one: its blanks, then a prefix of the
        /// opening or the opening and more.
        func mayBeCall(_ text: String) -> Bool {
            let rest = ToolCalling.droppingLeadingBlanks(text)
            return printedOpenings.contains { rest.hasPrefix($0) || $0.hasPrefix(rest) }
        }

        /// The calls in a turn's text (blanks, the opening, then the call's JSON and what may
        /// close it), or nil when it is not a call. `opened`: the turn's constraint saw the whole
        /// opening, so a text without the opening's control token (which prints nothing) is read
        /// as a call too; without it, such a text (Mistral's `[{…}]`) is an answer.
        /// - Throws: `.decodingFailure` when the JSON is not a whole call.
        func calls(in text: String, opened: Bool = false) throws(LanguageModelSession.GenerationError)
            -> Transcript.ToolCalls?
        {
            let rest = ToolCalling.droppingLeadingBlanks(text)
            let openings = opened ? printedOpenings : [Substring(opening)]
            guard let printed = openings.first(where: { rest.hasPrefix($0) }) else { return nil }
            var json = openingIsJSON ? Substring(rest) : rest.dropFirst(printed.count)
            // The closing markup, when the text has it (generation stops at the JSON's end).
            while json.last == "\n" || json.last == " " { json = json.dropLast() }
            if !openingIsJSON, let closing, json.hasSuffix(closing) { json = json.dropLast(closing.count) }
            // A map among the arguments may repeat a key (the grammar does not remember keys): the last value counts.
            guard let content = try? GeneratedContent(generatedJSON: String(json)), content.isComplete,
                case .structure(let properties, _) = content.kind, case .string(let name)? = properties["name"]?.kind,
                let arguments = properties[argumentsKey]
            else {
                throw .decodingFailure(.init(debugDescription: "the tool call is not whole: \(json.prefix(200))"))
            }
            return Transcript.ToolCalls([Transcript.ToolCall(id: newCallID(), toolName: name, arguments: arguments)])
        }

        /// A new call's id: `call_` and 24 hex digits (OpenAI's shape), or as many alphanumerics
        /// as the template accepts.
        func newCallID() -> String {
            let digits = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            guard let callIDLength else { return "call_" + digits.prefix(24) }
            return String(digits.prefix(callIDLength))
        }

        /// `id` as the template accepts it: itself, or for a template that wants ids of one
        /// length (a client's `call_…` id under Mistral's), that many alphanumerics derived from
        /// it, the same for a call and its output.
        func templateID(_ id: String) -> String {
            guard let callIDLength,
                id.count != callIDLength || !id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) })
            else { return id }
            // FNV-1a over the id's bytes, written in base 36.
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in id.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            let digits = Array("0123456789abcdefghijklmnopqrstuvwxyz")
            return String(
                (0..<callIDLength).map { _ in
                    defer { hash /= 36 }
                    return digits[Int(hash % 36)]
                })
        }
    }

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

    /// A tool as chat templates list it: `{"type": "function", "function": {name, description, parameters}}`
    /// (the parameters' schema left out when the tool asks so).
    static func definition(_ tool: Transcript.ToolDefinition) -> GeneratedContent {
        var function: [(String, GeneratedContent)] = [
            ("name", GeneratedContent(kind: .string(tool.name))),
            ("description", GeneratedContent(kind: .string(tool.description))),
        ]
        if tool.showsSchema { function.append(("parameters", tool.parameters.jsonSchema)) }
        return GeneratedContent(
            kind: .structure(
                properties: [
                    "type": GeneratedContent(kind: .string("function")),
                    "function": GeneratedContent(
                        kind: .structure(
                            properties: Dictionary(uniqueKeysWithValues: function), orderedKeys: function.map(\.0))),
                ], orderedKeys: ["type", "function"]))
    }

    /// `content` as a template value (objects keep their key order).
    static func value(_ content: GeneratedContent) -> JinjaValue {
        switch content.kind {
        case .null: return .none
        case .bool(let value): return .boolean(value)
        case .number(let value):
            if value.rounded() == value, abs(value) < 1e15 { return .integer(Int(value)) }
            return .number(value)
        case .string(let value): return .string(value)
        case .array(let elements): return .array(elements.map(value))
        case .structure(let properties, let orderedKeys):
            var object = JinjaObject()
            for key in orderedKeys { object[key] = properties[key].map(value) ?? JinjaValue.none }
            return .object(object)
        }
    }

    /// The system message's section that lists `tools` and says how to call them (Hermes).
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
        for tool in tools { text += "\n" + definition(tool).jsonString }
        return text
    }

    /// An assistant turn that makes `calls`, as the model writes it (Hermes).
    static func text(of calls: Transcript.ToolCalls) -> String {
        calls.map { call in
            let name = GeneratedContent(kind: .string(call.toolName)).jsonString
            return Format.hermes.opening + "{\"name\": \(name), \"arguments\": \(call.arguments.jsonString)}"
                + "\n" + Format.closingTag
        }.joined(separator: "\n")
    }

    /// A tool's output (its text) as the model reads it (a user turn, Hermes).
    static func response(_ content: String) -> String {
        "<tool_response>\n\(content)\n</tool_response>"
    }

    /// The chat messages for `entries` in the Hermes layout: `tools` are listed in the system
    /// message (one is added when there is none), calls are assistant text, outputs user turns.
    static func hermesMessages(_ entries: [Transcript.Entry], tools: [Transcript.ToolDefinition]) -> [ChatMessage] {
        var messages: [ChatMessage] = entries.map { entry in
            switch entry {
            case .instructions: return ChatMessage(role: .system, content: entry.promptText)
            case .prompt: return ChatMessage(role: .user, content: entry.promptText)
            case .response: return ChatMessage(role: .assistant, content: entry.promptText)
            case .toolCalls(let calls): return ChatMessage(role: .assistant, content: text(of: calls))
            case .toolOutput: return ChatMessage(role: .user, content: response(entry.promptText))
            }
        }
        guard !tools.isEmpty else { return messages }
        let section = instructions(tools)
        if let system = messages.firstIndex(where: { $0.role == .system }) {
            let own = messages[system].content
            messages[system].content = own.isEmpty ? section : own + "\n\n" + section
        } else {
            messages.insert(ChatMessage(role: .system, content: section), at: 0)
        }
        return messages
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
}

/// The `TokenConstraint` of a turn that may call tools: while the response is still a prefix of
/// the format's opening (`<tool_call>\n`, `{"name"`), either way stays open (the call, or the answer: free text or a value of the
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

    /// The control token that stands for the opening's first bytes (Mistral's `[TOOL_CALLS]`)
    /// when the vocabulary has it, and those bytes.
    private let marker: (id: Int, bytes: ArraySlice<UInt8>)?
    /// The bytes of the turn's start, one at a time: masks in the opening phase are this
    /// automaton's walk over the vocabulary's trie, and a chosen token's bytes are its fold.
    private let start: Start
    /// Whether the turn may, must or must not call.
    enum Mode {
        case optional, required, forbidden
    }
    private let mode: Mode
    private let model: LlamaModel
    private var phase = Phase.opening(matched: 0, blanks: 0)

    init(
        callGrammar: JSONGrammar, answerGrammar: JSONGrammar?, mode: Mode, model: LlamaModel,
        format: ToolCalling.Format = .hermes
    ) {
        if let text = format.marker, let id = model.tokenizer.id(for: text), model.tokenizer.isControl(id) {
            self.marker = (id, ArraySlice(text.utf8))
        } else {
            self.marker = nil
        }
        self.start = Start(
            opening: Array(format.opening.utf8), openingIsJSON: format.openingIsJSON, callGrammar: callGrammar,
            answerGrammar: answerGrammar, mode: mode)
        self.mode = mode
        self.model = model
        // A forbidden call under an answer grammar is just the answer (for Hermes and Qwen, JSON
        // cannot start with `<`; Llama 3.1's call would be a JSON answer too).
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
        case .opening: return start.endsFree
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

    /// The start of a turn that may call, read a byte at a time: while the bytes are blanks and
    /// then a prefix of the opening, either way stays open; the whole opening enters the call
    /// (its grammar); a byte off the opening enters the answer (free, or its grammar from the
    /// opening's bytes matched so far). A byte is refused where the call is required and the
    /// bytes leave the opening, where a forbidden call would be named, or where a grammar
    /// refuses it.
    struct Start: ByteAutomaton {
        /// Where the response stands.
        enum Position {
            /// `blanks` blanks, then the first `matched` bytes of the opening.
            case opening(matched: Int, blanks: Int)
            /// In the call: its grammar's state.
            case call(JSONGrammar.State)
            /// In the answer: its grammar's state, nil for free text.
            case answer(JSONGrammar.State?)
        }

        let opening: [UInt8]
        /// Whether the opening is the call's own first bytes (fed to its grammar).
        let openingIsJSON: Bool
        let callGrammar: JSONGrammar
        let answerGrammar: JSONGrammar?
        let mode: Mode
        /// The most blanks a turn may start with before a call's opening.
        static let maximumBlanks = 4

        /// Whether the turn may end before the opening is whole (a free answer, possibly
        /// "<tool", which is text).
        var endsFree: Bool { mode != .required && answerGrammar == nil }

        func step(_ position: Position, _ byte: UInt8) -> Position? {
            switch position {
            case .call(let state):
                let next = callGrammar.advance(state, byte)
                return next.isDead ? nil : .call(next)
            case .answer(nil):
                return position
            case .answer(let state?):
                guard let answerGrammar else { return nil }
                let next = answerGrammar.advance(state, byte)
                return next.isDead ? nil : .answer(next)
            case .opening(let matched, let blanks):
                // Blanks before the opening (not under an answer grammar: JSON starts at once).
                if answerGrammar == nil || mode == .required, matched == 0, blanks < Self.maximumBlanks,
                    byte == 0x20 || byte == 0x0A
                {
                    return .opening(matched: 0, blanks: blanks + 1)
                }
                if byte == opening[matched] {
                    let now = matched + 1
                    // A forbidden call is not even named: `<tool_call` is refused (the markup
                    // without the newline would still read as a call).
                    if mode == .forbidden, now >= opening.count - 1 { return nil }
                    guard now == opening.count else { return .opening(matched: now, blanks: blanks) }
                    let state =
                        openingIsJSON
                        ? callGrammar.advance(callGrammar.initialState, opening[...]) : callGrammar.initialState
                    return state.isDead ? nil : .call(state)
                }
                guard mode != .required else { return nil }
                guard let answerGrammar else { return .answer(nil) }
                let state = answerGrammar.advance(
                    answerGrammar.advance(answerGrammar.initialState, opening[..<matched]), byte)
                return state.isDead ? nil : .answer(state)
            }
        }

        /// `bytes` read from `position`, a byte at a time; nil when one is refused.
        func read(_ position: Position, _ bytes: ArraySlice<UInt8>) -> Position? {
            var position = position
            for byte in bytes {
                guard let next = step(position, byte) else { return nil }
                position = next
            }
            return position
        }
    }

    func mask(_ logits: UnsafeMutableBufferPointer<Float>) -> Bool {
        switch phase {
        case .call(let decoding): return decoding.mask(logits)
        case .answer(let decoding?): return decoding.mask(logits)
        case .answer(nil): return logits.contains { $0 > -.infinity }
        case .opening(let matched, let blanks):
            let position = Start.Position.opening(matched: matched, blanks: blanks)
            // The vocabulary's trie holds every token but the control and stop tokens.
            let vocabulary = GuidedVocabulary.of(model)
            let bits = vocabulary.allowedTokens(start, from: position)
            // The call's control token: refused outright for a forbidden call (it prints nothing).
            let markerAllowed = marker.map { mode != .forbidden && start.read(position, $0.bytes) != nil } ?? false
            var any = false
            for id in 0..<logits.count {
                let allowed: Bool
                if id >= vocabulary.size {
                    allowed = false
                } else if bits[id >> 6] >> UInt64(id & 63) & 1 != 0 {
                    allowed = true
                } else if vocabulary.stopTokenIDs.contains(id) {
                    allowed = start.endsFree
                } else {
                    allowed = markerAllowed && id == marker?.id
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
            let bytes = marker.flatMap { $0.id == token ? $0.bytes : nil } ?? model.tokenizer.bytes(for: token)
            switch start.read(.opening(matched: matched, blanks: blanks), bytes) {
            case .opening(let now, let blanks)?: phase = .opening(matched: now, blanks: blanks)
            case .call(let state)?:
                let decoding = GuidedDecoding(grammar: start.callGrammar, model: model)
                decoding.start(at: state)
                phase = .call(decoding)
            case .answer(let state)?:
                guard let state, let answerGrammar = start.answerGrammar else {
                    phase = .answer(nil)
                    return
                }
                let decoding = GuidedDecoding(grammar: answerGrammar, model: model)
                decoding.start(at: state)
                phase = .answer(decoding)
            case nil:
                // Masked out; reached only if a caller samples outside the mask.
                phase = .answer(nil)
            }
        }
    }
}
