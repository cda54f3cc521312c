import Dispatch
import XCTest

@testable import LinearAlgebra

/// `BLAS.singleThreaded`: one BLAS thread inside, the thread count found outside again after the
/// last scope, across nesting, threads, errors and a count set meanwhile.
final class BLASThreadsTests: XCTestCase {
    struct Failure: Error {}

    func testScopesNestAndRestoreTheCountFound() throws {
        #if canImport(Accelerate)
            throw XCTSkip("Accelerate chooses its own threads")
        #else
            let saved = BLAS.threadCount
            defer { BLAS.threadCount = saved }
            BLAS.threadCount = 2
            BLAS.singleThreaded {
                XCTAssertEqual(BLAS.threadCount, 1)
                BLAS.singleThreaded { XCTAssertEqual(BLAS.threadCount, 1) }
                XCTAssertEqual(BLAS.threadCount, 1, "an inner scope's end leaves the outer one single-threaded")
            }
            XCTAssertEqual(BLAS.threadCount, 2)
            XCTAssertThrowsError(try BLAS.singleThreaded { throw Failure() })
            XCTAssertEqual(BLAS.threadCount, 2, "restored when the body throws")
        #endif
    }

    func testACountSetInsideAScopeTakesEffectAfterIt() throws {
        #if canImport(Accelerate)
            throw XCTSkip("Accelerate chooses its own threads")
        #else
            let saved = BLAS.threadCount
            defer { BLAS.threadCount = saved }
            BLAS.threadCount = 1
            BLAS.singleThreaded {
                BLAS.threadCount = 2
                XCTAssertEqual(BLAS.threadCount, 1)
            }
            XCTAssertEqual(BLAS.threadCount, 2)
        #endif
    }

    func testScopesOnSeveralThreadsEndWithTheCountFound() throws {
        #if canImport(Accelerate)
            throw XCTSkip("Accelerate chooses its own threads")
        #else
            let saved = BLAS.threadCount
            defer { BLAS.threadCount = saved }
            BLAS.threadCount = 2
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                BLAS.singleThreaded {
                    precondition(BLAS.threadCount == 1)
                    _ = VectorMath.dot([1, 2, 3], [4, 5, 6])
                }
            }
            XCTAssertEqual(BLAS.threadCount, 2)
        #endif
    }
}
