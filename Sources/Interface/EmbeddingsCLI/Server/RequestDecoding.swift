import Embeddings
import Foundation
import JSONText

/// Texts as OpenAI's `input` and `stop` and TEI's `inputs` carry them: one string or an array of strings.
/// Arrays of token ids (which OpenAI also accepts) are refused with a clear message.
enum TextInputs: Decodable, Sendable {
    case one(String)
    case many([String])

    var texts: [String] {
        switch self {
        case .one(let text): return [text]
        case .many(let texts): return texts
        }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self) {
            self = .one(text)
        } else if let texts = try? container.decode([String].self) {
            self = .many(texts)
        } else if (try? container.decode([Int].self)) != nil || (try? container.decode([[Int]].self)) != nil {
            throw TokenIDInputs(field: decoder.codingPath.last?.stringValue ?? "input")
        } else {
            throw DecodingError.typeMismatch(
                String.self,
                DecodingError.Context(
                    codingPath: decoder.codingPath, debugDescription: "a string or an array of strings"))
        }
    }
}

/// An input of token ids instead of text.
struct TokenIDInputs: Error {
    let field: String
}

/// A sub-range of an input for pooling, `{"start", "end", "unit": "utf8"|"scalar"}`.
struct OffsetRange: Decodable, Sendable {
    let start: Int
    let end: Int
    let unit: String?
}

/// Reading request bodies: the JSON read once (`JSONReader`: strict, object keys in document
/// order, a repeated key's last value) and decoded into the route's type (`JSONNodeDecoder`), with
/// every failure a 400 in OpenAI's error shape naming the field.
enum RequestDecoding {
    /// The body as UTF-8: invalid sequences are repaired (each becomes U+FFFD), as
    /// `embeddings embed` repairs its input lines; `repaired` says whether that happened.
    static func utf8(_ body: [UInt8]) -> (data: Data, repaired: Bool) {
        if String(validating: body, as: UTF8.self) != nil { return (Data(body), false) }
        return (Data(String(decoding: body, as: UTF8.self).utf8), true)
    }

    static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        guard !data.isEmpty else {
            throw APIError.badRequest("the body is empty; expected a JSON object", code: "invalid_json")
        }
        let node: JSONNode
        do {
            node = try JSONReader.read(
                String(decoding: data, as: UTF8.self), acceptsTruncation: false, repeatedKeys: .keepLast)
        } catch {
            throw APIError.badRequest(
                "the body is not valid JSON: \(error.message) at byte \(error.offset)", code: "invalid_json")
        }
        do {
            return try JSONNodeDecoder().decode(T.self, from: node)
        } catch let error as TokenIDInputs {
            throw APIError.badRequest(
                "'\(error.field)' holds token ids; this server takes text (a string or an array of strings)",
                param: error.field, code: "token_ids_not_supported")
        } catch let error as DecodingError {
            throw apiError(error)
        }
    }

    private static func apiError(_ error: DecodingError) -> APIError {
        func path(_ context: DecodingError.Context) -> String? {
            context.codingPath.isEmpty
                ? nil : context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let field = (path(context).map { $0 + "." } ?? "") + key.stringValue
            return .badRequest("missing '\(field)'", param: field, code: "missing_field")
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            guard let field = path(context) else {
                return .badRequest("the body must be a JSON object", code: "invalid_json")
            }
            return .badRequest("'\(field)' must be \(describe(type, context))", param: field, code: "invalid_type")
        case .dataCorrupted(let context):
            guard let field = path(context) else {
                return .badRequest("the body is not valid JSON", code: "invalid_json")
            }
            return .badRequest(
                "'\(field)' is not valid: \(context.debugDescription)", param: field, code: "invalid_value")
        @unknown default:
            return .badRequest("the body cannot be read", code: "invalid_json")
        }
    }

    private static func describe(_ type: Any.Type, _ context: DecodingError.Context) -> String {
        if context.debugDescription == "a string or an array of strings" { return context.debugDescription }
        switch type {
        case is String.Type: return "a string"
        case is Int.Type: return "an integer"
        case is Bool.Type: return "true or false"
        case is Double.Type, is Float.Type: return "a number"
        default: return "of another type"
        }
    }

    /// `value` checked against `allowed` (nil: `fallback`).
    static func choice(_ value: String?, param: String, allowed: [String], default fallback: String) throws -> String {
        guard let value else { return fallback }
        guard allowed.contains(value) else {
            throw APIError.badRequest(
                "'\(param)' must be \(allowed.map { "'\($0)'" }.joined(separator: " or ")), got '\(value)'",
                param: param, code: "invalid_value")
        }
        return value
    }

    /// The `input_type` field (query or passage), or the server's default.
    static func inputType(_ value: String?, default fallback: ContextualEmbedding.InputType) throws
        -> ContextualEmbedding.InputType
    {
        let text = try choice(
            value, param: "input_type", allowed: ContextualEmbedding.InputType.allCases.map(\.rawValue),
            default: fallback.rawValue)
        return ContextualEmbedding.InputType(rawValue: text) ?? fallback
    }
}
