import CommandLineOptions
import XCTest

/// `CLIError`'s exit codes (sysexits.h, the command-line contract) and messages.
final class CLIErrorTests: XCTestCase {
    func testExitCodesFollowSysexits() {
        let cases: [(CLIError, Int32)] = [
            (.usage("u"), 64), (.data("d"), 65), (.noInput("n"), 66), (.failure("f"), 1),
            (.unavailable("a"), 69), (.permission("p"), 77), (.status(3), 3),
        ]
        for (error, code) in cases { XCTAssertEqual(error.exitCode, code, "\(error)") }
    }

    func testMessageIsTheTextExceptForAStatus() {
        XCTAssertEqual(CLIError.data("bad line 3").message, "bad line 3")
        XCTAssertEqual(CLIError.status(1).message, "", "a status prints no error line")
    }
}
