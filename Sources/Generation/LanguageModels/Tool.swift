import Foundation

/// Something a model can call while it answers: Apple's `Tool`.
///
/// ```swift
/// struct Forecast: Tool {
///     let name = "getForecast"
///     let description = "The weather forecast for a city"
///     struct Arguments: Generable, Decodable {
///         var city: String
///         static var generationSchema: GenerationSchema {
///             GenerationSchema(type: Self.self, properties: [.init(name: "city", type: String.self)])
///         }
///     }
///     func call(arguments: Arguments) async throws -> String { "Sunny in \(arguments.city)" }
/// }
/// let session = LanguageModelSession(tools: [Forecast()], instructions: "Use tools when they help.")
/// ```
///
/// The session shows the model each tool's name, description and argument schema. When the model
/// calls one, its arguments are generated under `parameters` (so they always make an `Arguments`
/// value), the session awaits `call(arguments:)` on the caller's task, puts the output in the
/// transcript (`.toolCalls`, then `.toolOutput`) and lets the model go on with it in view.
/// A response makes at most `LanguageModelSession.maximumToolRounds` rounds of calls; the model
/// answers in text after the last one.
public protocol Tool<Arguments, Output>: Sendable {
    /// The arguments the model writes for a call.
    associatedtype Arguments: ConvertibleFromGeneratedContent
    /// What a call returns to the model.
    associatedtype Output: PromptRepresentable

    /// The name the model calls the tool by (letters, digits, `_` and `-` read best); by default
    /// the type's name.
    var name: String { get }
    /// What the tool does, in a sentence the model reads.
    var description: String { get }
    /// The shape of the arguments; by default `Arguments.generationSchema`.
    var parameters: GenerationSchema { get }
    /// Whether the instructions show the model the argument schema (as JSON Schema); the
    /// arguments follow it either way. Default true.
    var includesSchemaInInstructions: Bool { get }

    /// Runs the tool.
    /// - Throws: anything; the session reports it as `LanguageModelSession.ToolCallError`.
    func call(arguments: Arguments) async throws -> Output
}

extension Tool {
    public var name: String { "\(Self.self)" }
    public var includesSchemaInInstructions: Bool { true }
}

extension Tool where Arguments: Generable {
    public var parameters: GenerationSchema { Arguments.generationSchema }
}

/// Text a model reads: Apple's `Prompt`, made of text.
public struct Prompt: Sendable, Equatable, PromptRepresentable {
    /// The text.
    public var text: String
    /// A prompt of `text`.
    public init(_ text: String) { self.text = text }
    public var promptRepresentation: Prompt { self }
}

/// A value that can be put in front of a model as text: Apple's `PromptRepresentable`. Strings
/// are themselves; generated content and `Generable` values are their JSON.
public protocol PromptRepresentable {
    /// The value as the model reads it.
    var promptRepresentation: Prompt { get }
}

extension String: PromptRepresentable {
    public var promptRepresentation: Prompt { Prompt(self) }
}

extension GeneratedContent: PromptRepresentable {
    /// A string's text; any other value's JSON.
    public var promptRepresentation: Prompt {
        if case .string(let text) = kind { return Prompt(text) }
        return Prompt(jsonString)
    }
}

extension PromptRepresentable where Self: ConvertibleToGeneratedContent {
    public var promptRepresentation: Prompt { generatedContent.promptRepresentation }
}

extension Int: PromptRepresentable {}
extension Double: PromptRepresentable {}
extension Float: PromptRepresentable {}
extension Bool: PromptRepresentable {}
extension Array: PromptRepresentable where Element: ConvertibleToGeneratedContent {}

extension LanguageModelSession {
    /// A tool's call failed: Apple's `LanguageModelSession.ToolCallError`. The response ends with
    /// it and the transcript is left as it was before the request (calls of earlier rounds, and
    /// whatever they did, are not recorded in it).
    public struct ToolCallError: Error, LocalizedError, Sendable, CustomStringConvertible {
        /// The tool that failed.
        public var tool: any Tool
        /// What it threw (or why its arguments did not make an `Arguments` value).
        public var underlyingError: any Error

        /// The failure of `tool` with `underlyingError`.
        public init(tool: any Tool, underlyingError: any Error) {
            self.tool = tool
            self.underlyingError = underlyingError
        }

        public var description: String { "the tool \(tool.name) failed: \(underlyingError)" }
        public var errorDescription: String? { description }
    }
}
