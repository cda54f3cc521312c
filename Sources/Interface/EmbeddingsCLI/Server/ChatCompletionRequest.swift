import Foundation
import JSONText

/// The body of `POST /v1/chat/completions`, as OpenAI names its fields. Fields OpenAI has and
/// this server ignores (`user`, `metadata`, `store`, `service_tier`, …) and unknown fields are
/// not read; fields that would change the answer and cannot be honoured are decoded so that
/// they are refused by name (`ChatCompletion.validate`).
struct ChatCompletionRequest: Decodable {
    /// The model asked for: any name (the server has one chat model).
    let model: String?
    /// The conversation, oldest first; the last is the user's, or a tool's output.
    let messages: [Message]
    /// Whether to answer as server-sent events.
    let stream: Bool?
    /// With `stream`: whether a last chunk carries the usage.
    let streamOptions: StreamOptions?
    /// The most tokens of the answer (the older name of `max_completion_tokens`).
    let maxTokens: Int?
    /// The most tokens of the answer.
    let maxCompletionTokens: Int?
    /// 0 … 2; 0 is greedy.
    let temperature: Double?
    /// The nucleus, above 0 and at most 1.
    let topP: Double?
    /// Makes sampling repeatable.
    let seed: Int64?
    /// Where the answer ends.
    let stop: TextInputs?
    /// Choices wanted: only 1.
    let n: Int?
    /// Text, or JSON of a schema.
    let responseFormat: ResponseFormat?
    /// Functions the model may call (their `parameters` schemas kept as read, in key order, as
    /// `json_schema`'s is).
    let tools: [ToolSpecification]?
    /// `none`, `auto`, `required`, or `{"type": "function", "function": {"name": …}}`.
    let toolChoice: ToolChoice?
    /// Accepted: one call per turn is made either way.
    let parallelToolCalls: Bool?
    /// Sampling controls this engine lacks: refused unless they ask for nothing.
    let frequencyPenalty: Double?
    let presencePenalty: Double?
    let logitBias: [String: Double]?
    let logprobs: Bool?
    let topLogprobs: Int?

    enum CodingKeys: String, CodingKey {
        case model, messages, stream, temperature, seed, stop, n, tools, logprobs
        case streamOptions = "stream_options"
        case maxTokens = "max_tokens"
        case maxCompletionTokens = "max_completion_tokens"
        case topP = "top_p"
        case responseFormat = "response_format"
        case toolChoice = "tool_choice"
        case parallelToolCalls = "parallel_tool_calls"
        case frequencyPenalty = "frequency_penalty"
        case presencePenalty = "presence_penalty"
        case logitBias = "logit_bias"
        case topLogprobs = "top_logprobs"
    }

    /// One message: `role`, and `content` as a string or an array of parts.
    struct Message: Decodable {
        /// `system`, `developer`, `user`, `assistant` or `tool`.
        let role: String
        /// The text (null only beside tool calls).
        let content: Content?
        /// A participant's name: accepted, not used.
        let name: String?
        /// An assistant's earlier tool calls.
        let toolCalls: [ToolCall]?
        /// A tool message's call: the id of the call it answers.
        let toolCallID: String?

        enum CodingKeys: String, CodingKey {
            case role, content, name
            case toolCalls = "tool_calls"
            case toolCallID = "tool_call_id"
        }
    }

    /// A message's content: text, or parts (`{"type": "text", "text": …}`; other types are read
    /// so that they can be refused by name).
    enum Content: Decodable {
        case text(String)
        case parts([Part])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self) {
                self = .text(text)
            } else {
                self = .parts(try container.decode([Part].self))
            }
        }
    }

    /// One part of a message's content.
    struct Part: Decodable {
        /// `text` is the one read.
        let type: String
        /// A text part's text.
        let text: String?
    }

    /// `stream_options`.
    struct StreamOptions: Decodable {
        /// Whether a last chunk, with no choices, carries the usage.
        let includeUsage: Bool?

        enum CodingKeys: String, CodingKey {
            case includeUsage = "include_usage"
        }
    }

    /// `response_format`: `{"type": "text" | "json_object" | "json_schema", "json_schema": {…}}`.
    struct ResponseFormat: Decodable {
        /// `text`, `json_object` or `json_schema`.
        let type: String
        /// With `json_schema`: the schema's name and (presence of) the schema.
        let jsonSchema: JSONSchema?

        enum CodingKeys: String, CodingKey {
            case type
            case jsonSchema = "json_schema"
        }

        /// `json_schema`: `{name, description, strict, schema}`.
        struct JSONSchema: Decodable {
            /// The schema's name (the root object's).
            let name: String
            /// What the answer is: accepted, not used.
            let description: String?
            /// Accepted: every answer follows its schema by construction.
            let strict: Bool?
            /// The schema as read, its properties in the body's order (the order the answer writes them in).
            let schema: JSONNode?
        }
    }
}

extension ChatCompletionRequest {
    /// `{"type": "function", "function": {"name", "description", "parameters", "strict"}}`.
    struct ToolSpecification: Decodable {
        /// `function`, the one type.
        let type: String
        let function: Function

        struct Function: Decodable {
            let name: String
            let description: String?
            /// The arguments' schema as read, in the body's key order.
            let parameters: JSONNode?
            /// Accepted: arguments follow their schema by construction.
            let strict: Bool?
        }
    }

    /// `tool_choice`: a word, or one function by name.
    enum ToolChoice: Decodable {
        case word(String)
        case function(String)

        private struct Named: Decodable {
            let type: String
            let function: Name
            struct Name: Decodable { let name: String }
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let word = try? container.decode(String.self) {
                self = .word(word)
            } else {
                let named = try container.decode(Named.self)
                guard named.type == "function" else {
                    throw DecodingError.dataCorruptedError(
                        in: container, debugDescription: "'type' must be 'function', got '\(named.type)'")
                }
                self = .function(named.function.name)
            }
        }
    }

    /// An assistant message's call: `{"id", "type": "function", "function": {"name", "arguments"}}`,
    /// the arguments as JSON text.
    struct ToolCall: Decodable {
        let id: String
        let type: String?
        let function: Function

        struct Function: Decodable {
            let name: String
            let arguments: String
        }
    }
}
