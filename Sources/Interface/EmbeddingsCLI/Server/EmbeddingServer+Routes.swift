import Embeddings
import Foundation
import JSONText
import Retrieval

/// The request bodies, as OpenAI, text-embeddings-inference and this project name their fields.
private struct OpenAIEmbeddingsRequest: Decodable {
    let input: TextInputs
    let model: String?
    let encodingFormat: String?
    let dimensions: Int?
    let user: String?
    let inputType: String?

    enum CodingKeys: String, CodingKey {
        case input, model, dimensions, user
        case encodingFormat = "encoding_format"
        case inputType = "input_type"
    }
}

private struct TEIEmbedRequest: Decodable {
    let inputs: TextInputs
    let normalize: Bool?
    let truncate: Bool?
    let inputType: String?

    enum CodingKeys: String, CodingKey {
        case inputs, normalize, truncate
        case inputType = "input_type"
    }
}

private struct TokenEmbeddingsRequest: Decodable {
    let input: TextInputs
    let pooling: String?
    let normalize: Bool?
    let range: OffsetRange?
    let inputType: String?
    let model: String?

    enum CodingKeys: String, CodingKey {
        case input, pooling, normalize, range, model
        case inputType = "input_type"
    }
}

private struct TokenizeRequest: Decodable {
    let inputs: TextInputs?
    let input: TextInputs?
    let inputType: String?

    enum CodingKeys: String, CodingKey {
        case inputs, input
        case inputType = "input_type"
    }
}

private struct SearchRequest: Decodable {
    let question: String?
    let query: String?
    let k: Int?
    let mode: String?
    let precision: String?
    let budget: Int?
}

extension EmbeddingServer {
    /// `POST /v1/embeddings`, OpenAI's request and response: each input's pooled, unit-length
    /// vector, as floats or base64 of little-endian float32. Long inputs are truncated to the
    /// model's maximum, as `embeddings embed` does.
    func embeddings(_ data: Data, reply: @escaping @Sendable (HTTPResponse) -> Void) throws {
        let request = try RequestDecoding.decode(OpenAIEmbeddingsRequest.self, from: data)
        let base64 =
            try RequestDecoding.choice(
                request.encodingFormat, param: "encoding_format", allowed: ["float", "base64"], default: "float")
            == "base64"
        if let dimensions = request.dimensions, dimensions != embedding.dimension {
            throw APIError.badRequest(
                "'dimensions' \(dimensions) is not offered: \(embedding.modelIdentifier) gives \(embedding.dimension)-dimensional vectors",
                param: "dimensions", code: "unsupported_dimensions")
        }
        let inputType = try RequestDecoding.inputType(request.inputType, default: configuration.inputType)
        let texts = request.input.texts
        let tokenized = try prepare(texts, param: "input", inputType: inputType, refuseTruncation: false)
        let tokens = tokenized.reduce(0) { $0 + $1.tokens.count }
        let model = embedding.modelIdentifier
        let pooling = embedding.poolingStrategy
        encode(texts, tokens: tokens, inputType: inputType, reply: reply) { results in
            var json = JSONWriter()
            json.beginObject()
            json.field("object", "list")
            json.key("data")
            json.beginArray()
            for (i, result) in results.enumerated() {
                json.beginObject()
                json.field("object", "embedding")
                json.field("index", i)
                json.key("embedding")
                let vector = result.pooled(pooling).normalizedToUnitLength
                if base64 { json.string(Self.base64(vector)) } else { json.floats(vector) }
                json.endObject()
            }
            json.endArray()
            json.field("model", model)
            Self.writeUsage(tokens: tokens, into: &json)
            json.endObject()
            return .json(json.text)
        }
    }

    /// `POST /embed`, text-embeddings-inference's shape: `[[Float]]`. `normalize` (default
    /// true) scales to unit length; an input over the model's maximum is refused (413) unless
    /// `truncate` is true, as TEI does.
    func embed(_ data: Data, reply: @escaping @Sendable (HTTPResponse) -> Void) throws {
        let request = try RequestDecoding.decode(TEIEmbedRequest.self, from: data)
        let inputType = try RequestDecoding.inputType(request.inputType, default: configuration.inputType)
        let texts = request.inputs.texts
        let tokenized = try prepare(
            texts, param: "inputs", inputType: inputType, refuseTruncation: !(request.truncate ?? false))
        let normalize = request.normalize ?? true
        let pooling = embedding.poolingStrategy
        encode(texts, tokens: tokenized.reduce(0) { $0 + $1.tokens.count }, inputType: inputType, reply: reply) {
            results in
            var json = JSONWriter()
            json.beginArray()
            for result in results {
                let pooled = result.pooled(pooling)
                json.floats(normalize ? pooled.normalizedToUnitLength : pooled)
            }
            json.endArray()
            return .json(json.text)
        }
    }

    /// `POST /v1/token-embeddings`: per input, what `embeddings embed --tokens --token-vectors`
    /// writes per line (the pooled `vector`, `tokens` with UTF-8 offsets, `token_vectors`), each
    /// token also with its Unicode scalar offsets. `pooling` (mean, max or cls; default the
    /// model's), `normalize` (default true) and `range` (mean over the tokens overlapping a
    /// sub-range of each input) shape `vector`.
    func tokenEmbeddings(_ data: Data, reply: @escaping @Sendable (HTTPResponse) -> Void) throws {
        let request = try RequestDecoding.decode(TokenEmbeddingsRequest.self, from: data)
        let inputType = try RequestDecoding.inputType(request.inputType, default: configuration.inputType)
        let pooling =
            try request.pooling.map {
                PoolingStrategy(
                    rawValue: try RequestDecoding.choice(
                        $0, param: "pooling", allowed: ["mean", "max", "cls"], default: "mean")) ?? .mean
            } ?? embedding.poolingStrategy
        if request.range != nil, request.pooling != nil, pooling != .mean {
            throw APIError.badRequest(
                "'range' pools with mean; 'pooling' \(pooling.rawValue) cannot go with it", param: "range",
                code: "invalid_value")
        }
        let unit = try RequestDecoding.choice(
            request.range?.unit, param: "range.unit", allowed: ["utf8", "scalar"], default: "utf8")
        let texts = request.input.texts
        let ranges = try request.range.map { range in try texts.map { try Self.stringRange(range, unit: unit, in: $0) }
        }
        let tokenized = try prepare(texts, param: "input", inputType: inputType, refuseTruncation: false)
        let tokens = tokenized.reduce(0) { $0 + $1.tokens.count }
        let normalize = request.normalize ?? true
        let model = embedding.modelIdentifier
        encode(texts, tokens: tokens, inputType: inputType, reply: reply) { results in
            var json = JSONWriter()
            json.beginObject()
            json.field("object", "list")
            json.key("data")
            json.beginArray()
            for (i, result) in results.enumerated() {
                json.beginObject()
                json.field("object", "token_embeddings")
                json.field("index", i)
                json.key("vector")
                let pooled = ranges.map { result.meanPooled(over: $0[i]) } ?? result.pooled(pooling)
                json.floats(normalize ? pooled.normalizedToUnitLength : pooled)
                TokenJSON.write(result, scalarOffsets: true, into: &json)
                TokenJSON.writeTokenVectors(result, into: &json)
                if tokenized[i].isTruncated { json.field("truncated", true) }
                json.endObject()
            }
            json.endArray()
            json.field("model", model)
            Self.writeUsage(tokens: tokens, into: &json)
            json.endObject()
            return .json(json.text)
        }
    }

    /// `POST /tokenize`: for each input, the object `embeddings tokenize` prints for it
    /// (`{"text", "tokens": [{"id", "text", "utf8"}], "truncated"?}`), in an array.
    func tokenize(_ data: Data) throws -> HTTPResponse {
        let request = try RequestDecoding.decode(TokenizeRequest.self, from: data)
        guard let inputs = request.inputs ?? request.input else {
            throw APIError.badRequest("missing 'inputs'", param: "inputs", code: "missing_field")
        }
        let inputType = try RequestDecoding.inputType(request.inputType, default: configuration.inputType)
        let texts = inputs.texts
        guard texts.count <= Configuration.maximumInputs else {
            throw APIError.tooLarge(
                "\(texts.count) inputs; this server takes at most \(Configuration.maximumInputs) per request",
                param: "inputs", code: "too_many_inputs")
        }
        var json = JSONWriter()
        json.beginArray()
        for text in texts {
            TokenizeCommand.write(
                key: "text", value: text, tokens: try embedding.tokenize(text, inputType: inputType), into: &json)
        }
        json.endArray()
        return .json(json.text, inputs: texts.count)
    }

    /// `POST /search`: `embeddings search --json`'s object for `question` (or `query`), `k`,
    /// `mode` and `budget`. `precision` may only name the one the server was started with.
    func search(_ data: Data) throws -> HTTPResponse {
        guard let store else { throw APIError(status: 404, message: "no index", code: "no_index") }
        let request = try RequestDecoding.decode(SearchRequest.self, from: data)
        guard let question = request.question ?? request.query, !question.trimmingCharacters(in: .whitespaces).isEmpty
        else {
            throw APIError.badRequest("missing 'question'", param: "question", code: "missing_field")
        }
        let k = request.k ?? SharedOptions.k.defaultValue ?? 4
        guard (0...10_000).contains(k) else {
            throw APIError.badRequest("'k' must be from 0 to 10000, got \(k)", param: "k", code: "invalid_value")
        }
        let budget = request.budget ?? Configuration.searchBudget
        guard budget >= 1 else {
            throw APIError.badRequest(
                "'budget' must be at least 1, got \(budget)", param: "budget", code: "invalid_value")
        }
        let mode =
            RetrievalMode(
                rawValue: try RequestDecoding.choice(
                    request.mode, param: "mode", allowed: ["hybrid", "lexical", "semantic"], default: "hybrid"))
            ?? .hybrid
        if let precision = request.precision, precision != configuration.precision {
            throw APIError.badRequest(
                "this server searches with precision '\(configuration.precision)' (--precision); got '\(precision)'",
                param: "precision", code: "invalid_value")
        }
        let hits: [RetrievalHit]
        do { hits = try store.search(question, mode: mode, k: k) } catch {
            throw APIError.store(error)
        }
        return .json(SearchCommand.json(question: question, hits: hits, budget: budget), inputs: 1)
    }

    /// The embedding routes' `"usage": {"prompt_tokens", "total_tokens"}` member (the same count:
    /// inputs are all prompt).
    static func writeUsage(tokens: Int, into json: inout JSONWriter) {
        json.key("usage")
        json.beginObject()
        json.field("prompt_tokens", tokens)
        json.field("total_tokens", tokens)
        json.endObject()
    }

    /// Base64 of the vector's float32 values, little-endian (what OpenAI's `encoding_format: base64` sends).
    static func base64(_ vector: [Float]) -> String {
        var bytes = [UInt8]()
        bytes.reserveCapacity(vector.count * 4)
        for x in vector {
            let bits = x.bitPattern.littleEndian
            for shift in stride(from: 0, to: 32, by: 8) {
                bytes.append(UInt8(truncatingIfNeeded: bits >> UInt32(shift)))
            }
        }
        return Data(bytes).base64EncodedString()
    }

    /// `range` as a range of `text`, in UTF-8 bytes or Unicode scalars; 400 when it is out of
    /// the text or (UTF-8) splits a scalar.
    static func stringRange(_ range: OffsetRange, unit: String, in text: String) throws -> Range<String.Index> {
        func fail(_ why: String) -> APIError {
            .badRequest("'range' [\(range.start), \(range.end)) \(why)", param: "range", code: "invalid_value")
        }
        guard 0 <= range.start, range.start <= range.end else { throw fail("must have 0 ≤ start ≤ end") }
        if unit == "scalar" {
            let scalars = text.unicodeScalars
            guard range.end <= scalars.count else { throw fail("is outside a text of \(scalars.count) scalars") }
            return scalars.index(
                scalars.startIndex, offsetBy: range.start)..<scalars.index(scalars.startIndex, offsetBy: range.end)
        }
        let utf8 = text.utf8
        guard range.end <= utf8.count else { throw fail("is outside a text of \(utf8.count) UTF-8 bytes") }
        let start = utf8.index(utf8.startIndex, offsetBy: range.start)
        let end = utf8.index(utf8.startIndex, offsetBy: range.end)
        guard start.samePosition(in: text.unicodeScalars) != nil, end.samePosition(in: text.unicodeScalars) != nil
        else {
            throw fail("splits a UTF-8 sequence")
        }
        return start..<end
    }
}
