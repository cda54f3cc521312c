import Foundation

/// What a session has said and heard, in order: Apple's `Transcript`: instructions (with the tools
/// the model may call), prompts, tool calls and their outputs, and responses, each of text
/// segments.
///
/// A session starts from one (`LanguageModelSession(model:transcript:)`) and keeps it current
/// (`session.transcript`); the chat template lays it out for the model on every request.
public struct Transcript: Sendable, Equatable, Codable, RandomAccessCollection {
    /// One piece of content.
    public enum Segment: Sendable, Equatable, Codable, Identifiable {
        /// Plain text.
        case text(TextSegment)

        public var id: String {
            switch self {
            case .text(let segment): return segment.id
            }
        }
    }

    /// A segment of plain text.
    public struct TextSegment: Sendable, Equatable, Codable, Identifiable {
        public var id: String
        /// The text.
        public var content: String
        /// A text segment (a fresh `id` by default).
        public init(id: String = UUID().uuidString, content: String) {
            self.id = id
            self.content = content
        }
    }

    /// The instructions a session was opened with: the chat's system message, and the tools the
    /// model may call.
    public struct Instructions: Sendable, Equatable, Codable, Identifiable {
        public var id: String
        public var segments: [Segment]
        /// The tools the model is shown.
        public var toolDefinitions: [ToolDefinition]
        /// Instructions made of `segments` (a fresh `id` by default).
        public init(id: String = UUID().uuidString, segments: [Segment], toolDefinitions: [ToolDefinition] = []) {
            self.id = id
            self.segments = segments
            self.toolDefinitions = toolDefinitions
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decode(String.self, forKey: .id)
            segments = try container.decode([Segment].self, forKey: .segments)
            // Transcripts written before tools have none.
            toolDefinitions = try container.decodeIfPresent([ToolDefinition].self, forKey: .toolDefinitions) ?? []
        }
    }

    /// A tool as the model is shown it: its name, what it does, and its arguments' shape.
    public struct ToolDefinition: Sendable, Equatable, Codable {
        /// The name the model calls it by.
        public var name: String
        /// What it does.
        public var description: String
        /// The shape of its arguments.
        public var parameters: GenerationSchema
        /// Whether the model is shown `parameters` as JSON Schema (it is enforced either way).
        var showsSchema = true

        /// A definition from its parts.
        public init(name: String, description: String, parameters: GenerationSchema) {
            self.name = name
            self.description = description
            self.parameters = parameters
        }

        /// The definition of `tool`.
        public init(tool: some Tool) {
            self.init(name: tool.name, description: tool.description, parameters: tool.parameters)
            showsSchema = tool.includesSchemaInInstructions
        }
    }

    /// The calls the model made in one turn.
    public struct ToolCalls: Sendable, Equatable, Codable, Identifiable, RandomAccessCollection {
        public var id: String
        private var calls: [ToolCall]
        /// The calls, in the order the model wrote them (a fresh `id` by default).
        public init(id: String = UUID().uuidString, _ calls: some Sequence<ToolCall>) {
            self.id = id
            self.calls = Array(calls)
        }
        public var startIndex: Int { calls.startIndex }
        public var endIndex: Int { calls.endIndex }
        public subscript(position: Int) -> ToolCall { calls[position] }
    }

    /// One call: the tool's name and the arguments the model wrote.
    public struct ToolCall: Sendable, Equatable, Codable, Identifiable {
        /// The call's identity; its output carries the same one.
        public var id: String
        public var toolName: String
        /// The arguments, as generated under the tool's `parameters`.
        public var arguments: GeneratedContent
        /// A call from its parts.
        public init(id: String, toolName: String, arguments: GeneratedContent) {
            self.id = id
            self.toolName = toolName
            self.arguments = arguments
        }
    }

    /// What a tool returned to the model.
    public struct ToolOutput: Sendable, Equatable, Codable, Identifiable {
        /// The identity of the call it answers.
        public var id: String
        public var toolName: String
        public var segments: [Segment]
        /// An output from its parts.
        public init(id: String, toolName: String, segments: [Segment]) {
            self.id = id
            self.toolName = toolName
            self.segments = segments
        }
    }

    /// A user's prompt, with the options it was answered under.
    public struct Prompt: Sendable, Equatable, Codable, Identifiable {
        public var id: String
        public var segments: [Segment]
        /// The options the prompt was answered with.
        public var options: GenerationOptions
        /// The shape a guided response had to take (nil: text).
        public var responseFormat: ResponseFormat?
        /// A prompt made of `segments` (a fresh `id` by default).
        public init(
            id: String = UUID().uuidString, segments: [Segment], options: GenerationOptions = GenerationOptions(),
            responseFormat: ResponseFormat? = nil
        ) {
            self.id = id
            self.segments = segments
            self.options = options
            self.responseFormat = responseFormat
        }
    }

    /// The shape a guided response takes: Apple's `Transcript.ResponseFormat`.
    public struct ResponseFormat: Sendable, Equatable, Codable {
        /// The schema's name (its type's).
        public var name: String
        /// The schema as JSON Schema, when the prompt showed it to the model.
        var schemaInPrompt: String?

        /// The format of `schema`, shown to the model in the prompt.
        public init(schema: GenerationSchema) { self.init(schema: schema, includedInPrompt: true) }

        /// The format of `type`'s values, shown to the model in the prompt.
        public init<Content: Generable>(type: Content.Type) { self.init(schema: Content.generationSchema) }

        init(schema: GenerationSchema, includedInPrompt: Bool) {
            name = schema.name
            schemaInPrompt = includedInPrompt ? schema.debugDescription : nil
        }

        /// What the prompt says after the user's text.
        var promptSuffix: String {
            guard let schemaInPrompt else { return "" }
            return "\n\nRespond with JSON that follows this JSON schema:\n\(schemaInPrompt)"
        }
    }

    /// The model's answer.
    public struct Response: Sendable, Equatable, Codable, Identifiable {
        public var id: String
        /// Identifiers of the model assets that produced it (the model's identifier here).
        public var assetIDs: [String]
        public var segments: [Segment]
        /// A response made of `segments` (a fresh `id` by default).
        public init(id: String = UUID().uuidString, assetIDs: [String], segments: [Segment]) {
            self.id = id
            self.assetIDs = assetIDs
            self.segments = segments
        }
    }

    /// One turn of the conversation.
    public enum Entry: Sendable, Equatable, Codable, Identifiable {
        case instructions(Instructions)
        case prompt(Prompt)
        case toolCalls(ToolCalls)
        case toolOutput(ToolOutput)
        case response(Response)

        public var id: String {
            switch self {
            case .instructions(let entry): return entry.id
            case .prompt(let entry): return entry.id
            case .toolCalls(let entry): return entry.id
            case .toolOutput(let entry): return entry.id
            case .response(let entry): return entry.id
            }
        }

        /// The entry as the model reads it: its text, and a prompt's schema when it showed one.
        var promptText: String {
            if case .prompt(let prompt) = self, let format = prompt.responseFormat { return text + format.promptSuffix }
            return text
        }

        /// The entry's text segments, joined.
        var text: String {
            let segments: [Segment]
            switch self {
            case .instructions(let entry): segments = entry.segments
            case .prompt(let entry): segments = entry.segments
            case .toolOutput(let entry): segments = entry.segments
            case .response(let entry): segments = entry.segments
            case .toolCalls: segments = []
            }
            return segments.map { segment in
                switch segment {
                case .text(let text): return text.content
                }
            }.joined()
        }
    }

    private var entries: [Entry]

    /// A transcript of `entries`, oldest first.
    public init(entries: some Sequence<Entry> = []) { self.entries = Array(entries) }

    public var startIndex: Int { entries.startIndex }
    public var endIndex: Int { entries.endIndex }
    public subscript(position: Int) -> Entry {
        get { entries[position] }
        set { entries[position] = newValue }
    }

    mutating func append(_ entry: Entry) { entries.append(entry) }
    mutating func append(contentsOf more: some Sequence<Entry>) { entries.append(contentsOf: more) }
}
