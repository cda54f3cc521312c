import LinearAlgebra
import Synchronization
import XCTest

/// The library's warnings reach the handler the caller installs, and nothing without one.
final class DiagnosticsTests: XCTestCase {
    func testWarningsGoToTheInstalledHandlerOnly() {
        let received = Mutex([String]())
        Diagnostics.warn("before any handler")  // dropped
        Diagnostics.setHandler { message in received.withOrderedLock { $0.append(message) } }
        defer { Diagnostics.setHandler(nil) }
        Diagnostics.warn("kept OpenBLAS core Prescott")
        XCTAssertEqual(received.withOrderedLock { $0 }, ["kept OpenBLAS core Prescott"])
        Diagnostics.setHandler(nil)
        Diagnostics.warn("after removal")
        XCTAssertEqual(received.withOrderedLock { $0 }, ["kept OpenBLAS core Prescott"], "no handler: dropped")
    }
}
