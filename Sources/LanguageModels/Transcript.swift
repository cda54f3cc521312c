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
        /// A prompt made of `segments` (a fresh `id` by default).
        public init(
            id: String = UUID().uuidString, segments: [Segment], options: GenerationOptions = GenerationOptions()
        ) {
            self.id = id
            self.segments = segments
            self.options = options
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
