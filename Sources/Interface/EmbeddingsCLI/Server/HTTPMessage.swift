import Foundation
import JSONText

/// What the server knows of a request once its headers are in: enough to route it, check its
/// key and refuse its body before reading it.
struct HTTPRequestHead: Sendable {
    /// `GET`, `POST`, …
    let method: String
    /// The path without the query string: `/v1/embeddings`.
    let path: String
    /// The headers the routes read (`HTTPDaemon.capturedHeaders`), by lowercased name.
    let headers: [String: String]

    /// The header's value (names are case-insensitive), or nil.
    func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// `Content-Length` as a number; nil when it is absent (a chunked body) or not a number.
    var contentLength: Int? { header("Content-Length").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } }

    /// Whether a body follows the headers: a `Content-Length` above zero, or a chunked one.
    var hasBody: Bool { (contentLength ?? 0) > 0 || header("Transfer-Encoding") != nil }
}

/// A request with its whole body.
struct HTTPRequest: Sendable {
    let head: HTTPRequestHead
    let body: [UInt8]
    /// Whether the client has closed its connection, asked while the request is being worked on
    /// (before the reply): its socket, peeked without waiting, is at its end or broken. A client
    /// that only shut down its sending side reads as gone too (HTTP clients do not do that while
    /// they wait). After the reply, always false.
    var clientLeft: @Sendable () -> Bool = { false }
}

/// A response: status, content type, body and extra headers.
struct HTTPResponse: Sendable {
    var status: Int
    var contentType = "application/json"
    var body: [UInt8]
    var headers: [(name: String, value: String)] = []
    /// The inputs (texts) the request carried, for the log line and metrics; not sent.
    var inputs = 0
    /// A body produced over time, sent chunked in place of `body` (server-sent events).
    var stream: HTTPBodyStream? = nil
    /// How a streamed response ended, for the log line (`client went away`); not sent.
    var note: String? = nil

    /// A JSON response from its text.
    static func json(_ text: String, status: Int = 200, inputs: Int = 0) -> HTTPResponse {
        HTTPResponse(status: status, body: Array(text.utf8), inputs: inputs)
    }
}

/// A request the server refuses, answered in OpenAI's error shape:
/// `{"error": {"message", "type", "param", "code"}}`.
struct APIError: Error, Sendable {
    let status: Int
    let message: String
    /// The request field at fault (`input`, `dimensions`), or nil.
    var param: String? = nil
    /// A short machine-readable reason (`invalid_json`, `body_too_large`), or nil.
    var code: String? = nil
    /// Extra response headers (`Retry-After`, `Allow`).
    var headers: [(name: String, value: String)] = []

    /// 400: the body is not what the route reads.
    static func badRequest(_ message: String, param: String? = nil, code: String? = "invalid_request") -> APIError {
        APIError(status: 400, message: message, param: param, code: code)
    }

    /// 413: more than a limit allows; the message names the limit.
    static func tooLarge(_ message: String, param: String? = nil, code: String) -> APIError {
        APIError(status: 413, message: message, param: param, code: code)
    }

    /// OpenAI's `type`: `server_error` for 5xx, `invalid_request_error` otherwise.
    var type: String { status >= 500 ? "server_error" : "invalid_request_error" }

    /// The error as a JSON response.
    var response: HTTPResponse {
        var json = JSONWriter()
        json.beginObject()
        json.key("error")
        json.beginObject()
        json.field("message", message)
        json.field("type", type)
        json.field("param", param)
        json.field("code", code)
        json.endObject()
        json.endObject()
        var response = HTTPResponse.json(json.text, status: status)
        response.headers = headers
        return response
    }
}
