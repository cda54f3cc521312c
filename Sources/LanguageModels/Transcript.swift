import Foundation

/// What a session has said and heard, in order: Apple's `Transcript`, with the entries this
/// engine writes (instructions, prompts, responses) and text segments.
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

    /// The instructions a session was opened with: the chat's system message.
    public struct Instructions: Sendable, Equatable, Codable, Identifiable {
        public var id: String
        public var segments: [Segment]
        /// Instructions made of `segments` (a fresh `id` by default).
        public init(id: String = UUID().uuidString, segments: [Segment]) {
            self.id = id
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
        case response(Response)

        public var id: String {
            switch self {
            case .instructions(let entry): return entry.id
            case .prompt(let entry): return entry.id
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
            case .response(let entry): segments = entry.segments
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
