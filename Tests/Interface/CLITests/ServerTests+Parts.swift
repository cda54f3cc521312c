import Embeddings
import Foundation
import PostgresStorage
import Retrieval
import VectorIndex
import XCTest

@testable import EmbeddingsCLI

/// The server's parts that need no process: key comparison, base64, ranges, request decoding,
/// metrics text, store errors' statuses.
extension ServerTests {
    func testKeyComparison() {
        let key = Array("s3cret".utf8)
        XCTAssertTrue(EmbeddingServer.authorized("Bearer s3cret", key: key))
        for wrong in ["Bearer s3cre", "Bearer s3cret ", "Bearer S3cret", "bearer s3cret", "s3cret", "Bearer ", ""] {
            XCTAssertFalse(EmbeddingServer.authorized(wrong, key: key), wrong)
        }
        XCTAssertFalse(EmbeddingServer.authorized(nil, key: key))
    }

    func testBase64IsLittleEndianFloat32() {
        XCTAssertEqual(
            EmbeddingServer.base64([1, -2]),
            Data([0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0xC0]).base64EncodedString())
        XCTAssertEqual(EmbeddingServer.base64([]), "")
        XCTAssertEqual(Self.decodeBase64(EmbeddingServer.base64([0.1, 1e-30, -0])), [0.1, 1e-30, -0])
    }

    func testRangesInBytesAndScalars() throws {
        let text = "é river"  // é is 2 UTF-8 bytes, 1 scalar
        let bytes = try EmbeddingServer.stringRange(OffsetRange(start: 3, end: 8, unit: nil), unit: "utf8", in: text)
        XCTAssertEqual(String(text[bytes]), "river")
        let scalars = try EmbeddingServer.stringRange(
            OffsetRange(start: 2, end: 7, unit: "scalar"), unit: "scalar", in: text)
        XCTAssertEqual(String(text[scalars]), "river")
        XCTAssertEqual(
            String(
                text[try EmbeddingServer.stringRange(OffsetRange(start: 0, end: 0, unit: nil), unit: "utf8", in: text)]),
            "")
        for (start, end, unit) in [(1, 3, "utf8"), (0, 9, "utf8"), (0, 8, "scalar"), (4, 2, "utf8"), (-1, 2, "utf8")] {
            XCTAssertThrowsError(
                try EmbeddingServer.stringRange(OffsetRange(start: start, end: end, unit: unit), unit: unit, in: text),
                "\(start)..<\(end) \(unit)")
        }
    }

    func testRepairedUTF8() {
        XCTAssertFalse(RequestDecoding.utf8(Array("ok é".utf8)).repaired)
        let (data, repaired) = RequestDecoding.utf8([0x61, 0xFF, 0x62])
        XCTAssertTrue(repaired)
        XCTAssertEqual(String(decoding: data, as: UTF8.self), "a\u{FFFD}b")
    }

    func testMetricsText() {
        let metrics = ServerMetrics()
        metrics.request(route: "/v1/embeddings", status: 200, seconds: 0.003, inputs: 2)
        metrics.request(route: "other", status: 404, seconds: 0.0001, inputs: 0)
        metrics.batch(inputs: 3, tokens: 40)
        let text = metrics.text(queueDepth: 5)
        for line in [
            "embeddings_requests_total{route=\"/v1/embeddings\",status=\"200\"} 1",
            "embeddings_requests_total{route=\"other\",status=\"404\"} 1",
            "embeddings_request_duration_seconds_bucket{le=\"0.001\"} 1",
            "embeddings_request_duration_seconds_bucket{le=\"0.005\"} 2",
            "embeddings_request_duration_seconds_count 2", "embeddings_inputs_total 2",
            "embeddings_batch_inputs_bucket{le=\"2.0\"} 0",
            "embeddings_batch_inputs_bucket{le=\"4.0\"} 1", "embeddings_batch_tokens_sum 40.0",
            "embeddings_queue_depth 5",
        ] {
            XCTAssertTrue(text.split(separator: "\n").contains(Substring(line)), "missing '\(line)' in\n\(text)")
        }
    }

    /// Every case of every error a store throws answers `/search` with a status of its own
    /// choosing, never the catch-all 500 `internal_error`.
    func testEveryStoreErrorHasAStatus() {
        let fingerprint = IndexFingerprint(
            modelIdentifier: "m", dimension: 2, pooling: "mean", normalized: true, tokenizerHash: "t")
        var int8 = fingerprint
        int8.quantization = "int8"
        let cases: [(any Error, Int, String)] = [
            (RetrievalError.noVectors("no vectors"), 400, "invalid_value"),
            (VectorIndexError.fingerprintMismatch(expected: int8, actual: fingerprint), 400, "invalid_value"),
            (RetrievalError.corruptStore(path: "p", reason: "r"), 500, "store_error"),
            (RetrievalError.unreadable(path: "p", reason: "r"), 500, "store_error"),
            (RetrievalError.invalidUTF8(path: "p"), 500, "store_error"),
            (RetrievalError.emptyFile(path: "p"), 500, "store_error"),
            (RetrievalError.unsupportedSearch("u"), 500, "store_error"),
            (RetrievalError.invalidArgument("a"), 500, "store_error"),
            (VectorIndexError.dimensionMismatch(expected: 2, actual: 3), 500, "store_error"),
            (VectorIndexError.nonFiniteValue(id: "q", component: 0), 500, "store_error"),
            (VectorIndexError.codesMissing(.int8), 500, "store_error"),
            (VectorIndexError.io(path: "p", operation: "read", message: "m"), 500, "store_error"),
            (PostgresStoreError.cannotConnect("refused"), 503, "store_unavailable"),
            (PostgresStoreError.vectorExtensionMissing("none"), 503, "store_unavailable"),
            (PostgresStoreError.permissionDenied("no"), 500, "store_error"),
            (PostgresStoreError.invalidTablePrefix("x;"), 500, "store_error"),
            (PostgresStoreError.corruptStore("bad"), 500, "store_error"),
            (PostgresStoreError.queryFailed(state: "XX000", message: "m"), 500, "store_error"),
            (EmbeddingsError.invalidModel("m"), 500, "encoder_error"),
        ]
        for (error, status, code) in cases {
            let answer = APIError.store(error)
            XCTAssertEqual(answer.status, status, "\(error)")
            XCTAssertEqual(answer.code, code, "\(error)")
            XCTAssertEqual(answer.message, "\(error)", "the message is the error's own")
        }
        XCTAssertEqual(APIError.store(RetrievalError.noVectors("x")).param, "mode", "the client can change the mode")
        struct Unknown: Error {}
        XCTAssertEqual(APIError.store(Unknown()).code, "internal_error")
    }
}
