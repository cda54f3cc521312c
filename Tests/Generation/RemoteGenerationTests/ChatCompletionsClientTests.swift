import Foundation
import JSONText
import LinearAlgebra
import LoopbackHTTP
import RemoteGeneration
import Synchronization
import XCTest

/// The client of OpenAI-compatible servers against a real loopback server that misbehaves on
/// purpose: every fault is a typed error naming the URL, within a bounded time, and never a hang.
final class ChatCompletionsClientTests: XCTestCase {
    private let key = "sk-test-secret-123"

    private func client(_ port: Int, idle: Double = 1, attempts: Int = 3) -> ChatCompletionsClient {
        ChatCompletionsClient(
            baseURL: URL(string: "http://127.0.0.1:\(port)/v1")!, apiKey: key, idleTimeout: idle,
            maximumAttempts: attempts, maximumRetryDelay: 5)
    }

    private let body = Data(#"{"model": "m", "messages": [{"role": "user", "content": "hi"}]}"#.utf8)

    /// Runs `work`, failing if it takes longer than `seconds`; the error it threw (nil: none).
    private func timed(
        _ seconds: Double, _ work: () async throws -> Void, file: StaticString = #filePath,
        line: UInt = #line
    ) async -> (error: (any Error)?, elapsed: Double) {
        let start = Date()
        var thrown: (any Error)?
        do { try await work() } catch { thrown = error }
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertLessThan(elapsed, seconds, "took \(elapsed) s", file: file, line: line)
        return (thrown, elapsed)
    }

    private func kind(_ error: (any Error)?) -> ChatCompletionsError.Kind? { (error as? ChatCompletionsError)?.kind }

    func testPostReadsJSONAndSendsTheKeyOnlyInItsHeader() async throws {
        let server = try FaultServer { _, _ in [FaultServer.reply(200, #"{"id": "x", "choices": []}"#)] }
        defer { server.stop() }
        let reply = try await client(server.port).post("chat/completions", body: body)
        guard case .object(let members) = reply.kind else { return XCTFail("not an object") }
        XCTAssertEqual(members.map(\.key), ["id", "choices"])
        let request = try XCTUnwrap(server.received.first)
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.path, "/v1/chat/completions")
        XCTAssertEqual(request.headers["authorization"], "Bearer \(key)")
        XCTAssertEqual(request.headers["content-type"], "application/json")
        XCTAssertEqual(request.body, body)
    }

    func testStreamHandsOverEventsUntilDone() async throws {
        let server = try FaultServer { _, _ in
            [
                FaultServer.streamHead, FaultServer.event(#"{"n": 1}"#), .send(": a comment\r\n\r\n"),
                .send("data: {\"n\":\r\ndata: 2}\r\n\r\n"), FaultServer.event("[DONE]"), .pause(3),
            ]
        }
        defer { server.stop() }
        let seen = Seen<[String]>([])
        let (error, elapsed) = await timed(2) {
            try await client(server.port).stream("chat/completions", body: body) { event in
                seen.value.withOrderedLock { $0.append(event.data) }
                return true
            }
        }
        XCTAssertNil(error)
        XCTAssertLessThan(elapsed, 1, "[DONE] ends the stream without waiting for the close")
        XCTAssertEqual(seen.value.withOrderedLock { $0 }, [#"{"n": 1}"#, "{\"n\":\n2}"])
        XCTAssertEqual(server.received.first?.headers["accept"], "text/event-stream")
    }

    func testRefusedConnectionIsCannotConnectAtOnce() async throws {
        let port = try FaultServer.closedPort()
        let (error, _) = await timed(3) { _ = try await client(port).post("chat/completions", body: body) }
        XCTAssertEqual(kind(error), .cannotConnect)
        let text = "\(error.map { "\($0)" } ?? "")"
        XCTAssertTrue(text.hasPrefix("http://127.0.0.1:\(port)/v1/chat/completions: cannot connect"), text)
        XCTAssertFalse(text.contains(key))
    }

    func testUnknownHostIsCannotConnect() async throws {
        let client = ChatCompletionsClient(
            baseURL: URL(string: "http://user:pw@no-such-host.invalid:9/v1?token=abc")!, apiKey: key, idleTimeout: 2)
        let (error, _) = await timed(8) { _ = try await client.post("chat/completions", body: body) }
        XCTAssertEqual(kind(error), .cannotConnect)
        let text = "\(error.map { "\($0)" } ?? "")"
        XCTAssertTrue(text.hasPrefix("http://no-such-host.invalid:9/v1/chat/completions: "), text)
        XCTAssertFalse(text.contains("pw") || text.contains("abc") || text.contains(key), text)
    }

    func testNoHeadIsATimeout() async throws {
        let server = try FaultServer { _, _ in [.pause(8)] }
        defer { server.stop() }
        let (error, elapsed) = await timed(5) {
            _ = try await client(server.port).post("chat/completions", body: body)
        }
        XCTAssertEqual(kind(error), .timedOut(seconds: 1))
        XCTAssertGreaterThan(elapsed, 0.9)
        XCTAssertEqual(server.received.count, 1, "a timeout is not tried again")
    }

    func testStallBetweenEventsIsATimeoutAfterWhatArrived() async throws {
        let server = try FaultServer { _, _ in [FaultServer.streamHead, FaultServer.event("one"), .pause(8)] }
        defer { server.stop() }
        let seen = Seen(0)
        let (error, _) = await timed(5) {
            try await client(server.port).stream("chat/completions", body: body) { _ in
                seen.value.withOrderedLock { $0 += 1 }
                return true
            }
        }
        XCTAssertEqual(kind(error), .timedOut(seconds: 1))
        XCTAssertEqual(seen.value.withOrderedLock { $0 }, 1)
        XCTAssertEqual(server.received.count, 1)
    }

    func testRateLimitIsTriedAgainAfterRetryAfter() async throws {
        let server = try FaultServer { index, _ in
            index == 0
                ? [FaultServer.reply(429, #"{"error": {"message": "slow down"}}"#, headers: ["Retry-After": "1"])]
                : [FaultServer.reply(200, "{}")]
        }
        defer { server.stop() }
        let (error, elapsed) = await timed(5) {
            _ = try await client(server.port).post("chat/completions", body: body)
        }
        XCTAssertNil(error)
        XCTAssertGreaterThan(elapsed, 0.9, "waited as Retry-After said")
        XCTAssertEqual(server.received.count, 2)
    }

    func testRateLimitWithoutAttemptsLeftIsTyped() async throws {
        let server = try FaultServer { _, _ in
            [FaultServer.reply(429, #"{"error": {"message": "slow down"}}"#, headers: ["Retry-After": "7"])]
        }
        defer { server.stop() }
        // Retry-After beyond maximumRetryDelay (5 s): no wait, the error at once.
        let (error, _) = await timed(3) {
            _ = try await client(server.port).post("chat/completions", body: body)
        }
        XCTAssertEqual(kind(error), .rateLimited(retryAfter: 7))
        XCTAssertEqual((error as? ChatCompletionsError)?.detail, "slow down")
        XCTAssertEqual(server.received.count, 1)
    }

    func testUnavailableThenServedAndServerErrorNotRetried() async throws {
        let flaky = try FaultServer { index, _ in
            [index == 0 ? FaultServer.reply(503, "busy") : FaultServer.reply(200, "[1]")]
        }
        defer { flaky.stop() }
        let reply = try await client(flaky.port).post("chat/completions", body: body)
        XCTAssertEqual(reply.kind, .array([JSONNode(kind: .number("1", isInteger: true), isComplete: true)]))
        XCTAssertEqual(flaky.received.count, 2)

        let broken = try FaultServer { _, _ in
            [FaultServer.reply(500, #"{"error": {"message": "model crashed", "type": "server_error"}}"#)]
        }
        defer { broken.stop() }
        let (error, _) = await timed(3) {
            _ = try await client(broken.port).post("chat/completions", body: body)
        }
        XCTAssertEqual(kind(error), .status(500))
        XCTAssertEqual(
            "\(error.map { "\($0)" } ?? "")",
            "http://127.0.0.1:\(broken.port)/v1/chat/completions: HTTP 500: model crashed")
        XCTAssertEqual(broken.received.count, 1)
    }

    func testCutStreamIsStreamCutAndNotRetried() async throws {
        let server = try FaultServer { _, _ in [FaultServer.streamHead, FaultServer.event("one"), .send("data: tw")] }
        defer { server.stop() }
        let seen = Seen(0)
        let (error, _) = await timed(3) {
            try await client(server.port).stream("chat/completions", body: body) { _ in
                seen.value.withOrderedLock { $0 += 1 }
                return true
            }
        }
        XCTAssertEqual(kind(error), .streamCut)
        XCTAssertEqual((error as? ChatCompletionsError)?.detail, "inside an event")
        XCTAssertEqual(seen.value.withOrderedLock { $0 }, 1)
        XCTAssertEqual(server.received.count, 1)
    }

    func testBodyThatIsNotJSONIsInvalidResponse() async throws {
        let server = try FaultServer { _, _ in [FaultServer.reply(200, "<html>proxy login</html>")] }
        defer { server.stop() }
        let (error, _) = await timed(3) {
            _ = try await client(server.port).post("chat/completions", body: body)
        }
        XCTAssertEqual(kind(error), .invalidResponse)
    }

    func testCancellingTheTaskClosesTheConnection() async throws {
        let server = try FaultServer { _, _ in [FaultServer.streamHead, FaultServer.event("one"), .pause(8)] }
        defer { server.stop() }
        let first = expectation(description: "an event arrived")
        let client = client(server.port, idle: 20)
        let body = body
        let task = Task {
            try await client.stream("chat/completions", body: body) { _ in
                first.fulfill()
                return true
            }
        }
        await fulfillment(of: [first], timeout: 5)
        let start = Date()
        task.cancel()
        let result = await task.result
        XCTAssertLessThan(Date().timeIntervalSince(start), 2)
        guard case .failure(let error) = result, error is CancellationError else {
            return XCTFail("expected CancellationError, got \(result)")
        }
    }

    func testEventParserAcrossPiecesAndLimits() throws {
        var reader = ServerSentEvents(maximumLineBytes: 64)
        var events: [ServerSentEvents.Event] = []
        let stream = "\u{FEFF}event: delta\r\nid: 7\r\ndata: a\r\n\r\n: keep-alive\n\nevent: x\n\ndata:b\rdata:  c\r\r"
        // Fed one byte at a time: a CR LF split between pieces is one line end.
        for byte in Array(stream.utf8) { events += try reader.read([byte]) }
        XCTAssertEqual(
            events,
            [
                .init(name: "delta", data: "a", id: "7"), .init(name: "message", data: "b\n c", id: "7"),
            ])
        XCTAssertFalse(reader.holdsPartialEvent)
        _ = try reader.read(Array("data: half".utf8))
        XCTAssertTrue(reader.holdsPartialEvent)
        XCTAssertThrowsError(try reader.read([UInt8](repeating: 0x61, count: 100))) { error in
            XCTAssertEqual((error as? ServerSentEvents.LineTooLong)?.limit, 64)
        }
    }
}

/// A value shared with the event handler's closure.
private final class Seen<Value: Sendable>: Sendable {
    let value: Mutex<Value>
    init(_ initial: Value) { value = Mutex(initial) }
}
