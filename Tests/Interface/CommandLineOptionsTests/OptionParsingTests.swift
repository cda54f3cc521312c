import CommandLineOptions
import XCTest

/// The parser of CommandLineOptions on a small declared command: value forms, flags, `--`,
/// ranges and choices, and the usage and help derived from the declarations.
final class OptionParsingTests: XCTestCase {
    enum Color: String, CaseIterable, Sendable { case red, green, blue }

    enum Sample: CommandDescription {
        static let name = "sample"
        static let abstract = "A command to test the parser with."
        static let count = Option<Int>("--count", valueName: "n", help: "How many.", default: 4, range: 1...10)
        static let color = Option<Color>("--color", valueName: "c", help: "Which color. Red is loud.", default: .green)
        static let label = Option<String>("--label", valueName: "text", help: "A label.")
        static let tag = Option<String>("--tag", valueName: "t", help: "A tag, several allowed.")
        static let verbose = Flag("--verbose", help: "Say more.")
        static var options: [any OptionDeclaration] { [label.required, count, color, tag.repeatable, verbose] }
        static let arguments = [Argument("<file>", usage: "<file> ...", help: "Files.")]
    }

    func parse(_ arguments: [String]) throws -> ParsedArguments { try Sample.parse(arguments) }

    /// `body` throws `CLIError.usage(message)`.
    func assertUsageError(
        _ message: String, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Void
    ) {
        XCTAssertThrowsError(try body(), file: file, line: line) { error in
            XCTAssertEqual(error as? CLIError, .usage(message), file: file, line: line)
            XCTAssertEqual((error as? CLIError)?.exitCode, 64, file: file, line: line)
        }
    }

    func testDefaultsWhenNotGiven() throws {
        let parsed = try parse([])
        XCTAssertEqual(parsed[Sample.count], 4)
        XCTAssertEqual(parsed[Sample.color], .green)
        XCTAssertNil(parsed[Sample.label])
        XCTAssertFalse(parsed[Sample.verbose])
        XCTAssertFalse(parsed.contains(Sample.count), "a default is not given")
        XCTAssertEqual(parsed.positionals, [])
        XCTAssertFalse(parsed.isHelpRequested)
    }

    func testSeparateAndInlineValues() throws {
        let parsed = try parse(["--count", "7", "--color=blue", "--label=a=b", "--verbose", "f1", "f2"])
        XCTAssertEqual(parsed[Sample.count], 7)
        XCTAssertEqual(parsed[Sample.color], .blue)
        XCTAssertEqual(parsed[Sample.label], "a=b", "only the first = separates")
        XCTAssertTrue(parsed[Sample.verbose])
        XCTAssertEqual(parsed.positionals, ["f1", "f2"])
        XCTAssertEqual(parsed.text(Sample.count), "7")
    }

    func testEmptyInlineValue() throws {
        XCTAssertEqual(try parse(["--label="])[Sample.label], "")
    }

    func testLaterOccurrenceWinsAndAllAreKept() throws {
        let parsed = try parse(["--tag", "a", "--tag=b", "--count", "2", "--count", "3"])
        XCTAssertEqual(parsed[Sample.tag], "b")
        XCTAssertEqual(parsed.values(Sample.tag), ["a", "b"])
        XCTAssertEqual(parsed[Sample.count], 3)
        XCTAssertEqual(parsed.values(Sample.color), [], "the default is not a given value")
    }

    func testMissingValue() {
        assertUsageError("option '--count' needs a value") { _ = try parse(["--count"]) }
        assertUsageError("option '--label' needs a value") { _ = try parse(["f", "--label"]) }
    }

    /// The word after an option is its value, even when it looks like an option.
    func testValueThatLooksLikeAnOption() throws {
        XCTAssertEqual(try parse(["--label", "--verbose"])[Sample.label], "--verbose")
    }

    func testFlagWithValue() {
        assertUsageError("option '--verbose' takes no value") { _ = try parse(["--verbose=yes"]) }
    }

    func testUnknownOptions() {
        assertUsageError("unknown option '--colour'") { _ = try parse(["--colour", "red"]) }
        assertUsageError("unknown option '--colour'") { _ = try parse(["--colour=red"]) }
        assertUsageError("unknown option '-v'") { _ = try parse(["-v"]) }
    }

    func testNumbersAndDashAreArguments() throws {
        XCTAssertEqual(try parse(["-5", "-0.5", "-"]).positionals, ["-5", "-0.5", "-"])
    }

    func testHelpBeforeDoubleDash() throws {
        XCTAssertTrue(try parse(["f", "--help"]).isHelpRequested)
        XCTAssertTrue(try parse(["-h"]).isHelpRequested)
        // Help wins over a problem in the same arguments.
        XCTAssertTrue(try parse(["--bogus", "--count", "99", "--help"]).isHelpRequested)
        // In the place of an option's value too: help, not a value named --help.
        let asValue = try parse(["--label", "--help"])
        XCTAssertTrue(asValue.isHelpRequested)
        XCTAssertNil(asValue[Sample.label])
    }

    func testDoubleDashThenHelpIsAnArgument() throws {
        let parsed = try parse(["--verbose", "--", "--help", "-h", "--count", "99"])
        XCTAssertFalse(parsed.isHelpRequested)
        XCTAssertEqual(parsed.positionals, ["--help", "-h", "--count", "99"])
        XCTAssertEqual(parsed[Sample.count], 4)
        XCTAssertTrue(parsed[Sample.verbose])
    }

    func testIntegerRange() throws {
        assertUsageError("--count must be an integer from 1 to 10, got '0'") { _ = try parse(["--count", "0"]) }
        assertUsageError("--count must be an integer from 1 to 10, got '11'") { _ = try parse(["--count=11"]) }
        assertUsageError("--count must be an integer from 1 to 10, got 'many'") { _ = try parse(["--count", "many"]) }
        assertUsageError("--count must be an integer from 1 to 10, got ''") { _ = try parse(["--count="]) }
        XCTAssertEqual(try parse(["--count", "1"])[Sample.count], 1)
        XCTAssertEqual(try parse(["--count", "10"])[Sample.count], 10)
        XCTAssertEqual(
            try ParsedArguments(
                ["--n", "1_000_000"], options: [Option<Int>("--n", valueName: "n", help: "N.", range: 1...2_000_000)]
            )
            .value(Option<Int>("--n", valueName: "n", help: "N.", range: 1...2_000_000)), 1_000_000,
            "digits grouped with _")
    }

    func testOtherRangeForOneCommand() {
        let strict = Sample.count.with(range: 3...6)
        assertUsageError("--count must be an integer from 3 to 6, got '2'") {
            _ = try ParsedArguments(["--count", "2"], options: [strict])
        }
    }

    func testChoiceErrorListsAllowedValues() {
        assertUsageError("--color must be red, green or blue, got 'pink'") { _ = try parse(["--color", "pink"]) }
        let narrowed = Option<Color>("--color", valueName: "c", help: "Which.", choices: [.blue, .red])
        assertUsageError("--color must be blue or red, got 'green'") {
            _ = try ParsedArguments(["--color=green"], options: [narrowed])
        }
    }

    func testRequiredValueWithoutDefault() throws {
        assertUsageError("missing --label <text>") { _ = try parse([]).value(Sample.label) }
        XCTAssertEqual(try parse(["--label", "x"]).value(Sample.label), "x")
    }

    func testSetRecordsAValueAsIfTyped() throws {
        var parsed = try parse([])
        try parsed.set(Sample.color, to: "red")
        XCTAssertEqual(parsed[Sample.color], .red)
        XCTAssertTrue(parsed.contains(Sample.color))
        XCTAssertThrowsError(try parsed.set(Sample.color, to: "pink"))
    }

    func testUndeclaredOptionReadsAsNotGiven() throws {
        let other = Option<Int>("--other", valueName: "n", help: "Not Sample's.", default: 9, range: 0...9)
        let parsed = try parse([])
        XCTAssertEqual(parsed[other], 9)
        XCTAssertFalse(parsed.contains(other))
        XCTAssertFalse(parsed[Flag("--unlisted", help: "Not Sample's.")])
    }

    func testUsageAndHelpComeFromTheDeclarations() {
        XCTAssertEqual(
            Sample.usage(program: "tool"),
            "tool sample --label <text> [--count <n>] [--color red|green|blue] [--tag <t>]... [--verbose] <file> ...")
        XCTAssertEqual(
            Sample.help(program: "tool"),
            """
            OVERVIEW: A command to test the parser with.

            USAGE: tool sample --label <text> [--count <n>] [--color red|green|blue] [--tag <t>]... [--verbose] <file> ...

            ARGUMENTS:
              <file>  Files.

            OPTIONS:
              --label <text>  A label.
              --count <n>     How many (default: 4).
              --color <c>     Which color (red, green or blue; default: green). Red is loud.
              --tag <t>       A tag, several allowed.
              --verbose       Say more.
              -h, --help      Show help information.

            """)
    }

    func testOneOfInUsage() {
        let group = OneOf(Option<String>("--a", valueName: "x", help: "A."), Flag("--b", help: "B."))
        XCTAssertEqual(group.usage, "(--a <x> | --b)")
        XCTAssertEqual(group.members.map(\.name), ["--a", "--b"])
    }
}
