import Foundation
import Testing

/// Counts beyond 2^53 (where a Double rounds) print exactly in every command, never in exponent notation.
@Suite struct ExactCountCLITests {
    /// The largest count (2^64-1) and the first integer a Double cannot hold (2^53+1).
    static let input = "a 18446744073709551615\nb 9007199254740993\n"

    static func file() throws -> String { try CLI.temporary(Array(input.utf8), suffix: ".folded") }

    @Test func diffPrintsExactCounts() throws {
        let path = try Self.file()
        let result = try CLI.run(["diff", path, path])
        #expect(result.status == 0)
        #expect(result.out == "a 18446744073709551615 18446744073709551615\nb 9007199254740993 9007199254740993\n")
    }

    @Test func reportTextPrintsExactCountsAndWarnsAboutAnOverflowingTotal() throws {
        let result = try CLI.run(["report", try Self.file()])
        #expect(result.status == 0)
        #expect(result.out.contains("18446744073709551615   99.95%  a"))
        #expect(result.out.contains("9007199254740993    0.05%  b"))
        #expect(result.out.contains("heaviest stack: 18446744073709551615 samples"))
        #expect(!result.out.contains("e+"))
        // The total (2^64-1 + 2^53+1) does not fit the counting type: a warning, not a silently rounded number.
        #expect(result.err.contains("exceeds 2^64-1"))
    }

    @Test func reportTextTotalIsExactWhenItFits() throws {
        let path = try CLI.temporary(Array("b 9007199254740993\nc 1\n".utf8), suffix: ".folded")
        let result = try CLI.run(["report", path])
        #expect(result.out.contains("total 9007199254740994 samples"))
        #expect(result.err.isEmpty)
    }

    @Test func reportJSONPrintsExactIntegers() throws {
        let result = try CLI.run(["report", "--json", try Self.file()])
        #expect(result.status == 0)
        #expect(result.out.contains("{\"function\": \"a\", \"count\": 18446744073709551615,"))
        #expect(result.out.contains("{\"function\": \"b\", \"count\": 9007199254740993,"))
        #expect(result.out.contains("\"heaviestStackCount\": 18446744073709551615,"))
        #expect(!result.out.contains("e+") && !result.out.contains("E+"))
    }

    @Test(arguments: ["speedscope", "chrome-trace"])
    func exportsWriteExactCountsWithoutExponent(format: String) throws {
        let result = try CLI.run(["export", "--format", format, try Self.file()])
        #expect(result.status == 0)
        #expect(!result.out.isEmpty)
        #expect(!result.out.contains("e+") && !result.out.contains("E+"))
        // The weights as folded: past 2^53 a Double would have written ...552000 and ...992.
        #expect(result.out.contains("18446744073709551615") && result.out.contains("9007199254740993"), "\(result.out)")
    }

    @Test func pprofWritesExactCountsAndClampsPastInt64() throws {
        let result = try CLI.run(["export", "--format", "pprof", try Self.file(), "-o", "/dev/null"])
        #expect(result.status == 0)
        #expect(result.err.contains("1 count past 2^63-1 written as 2^63-1"), "\(result.err)")
    }

    @Test func aCountBeyondTheCountingTypeIsNamedInTheWarning() throws {
        let (status, out, err) = try CLI.run(["fold", "-"], input: "a 18446744073709551616\nb 1\n")
        #expect(status == 0)
        #expect(out == "b 1\n")
        #expect(err.contains("count exceeds 2^64-1"))
        #expect(!err.contains("unrecognized"))
        let strict = try CLI.run(["fold", "--strict", "-"], input: "a 18446744073709551616\n")
        #expect(strict.0 == 65)
    }

    @Test func flameGraphTitlesPrintExactCounts() throws {
        let result = try CLI.run(["flamegraph", try Self.file()])
        #expect(result.status == 0)
        #expect(result.out.contains("<title>a (18,446,744,073,709,551,615 samples, 99.95%)</title>"))
        #expect(result.out.contains("<title>b (9,007,199,254,740,993 samples, 0.05%)</title>"))
        #expect(result.out.contains("fg:w=\"18446744073709551615\""))
        #expect(!result.out.contains("e+"))
        // The root's count (the sum) does not fit the counting type: a warning.
        #expect(result.err.contains("exceeds 2^64-1"))
        let fits = try CLI.run(["flamegraph", try CLI.temporary(Array("a;b 9007199254740993\na;c 3\n".utf8), suffix: ".folded")])
        #expect(fits.out.contains("<title>all (9,007,199,254,740,996 samples, 100%)</title>"))
        #expect(fits.out.contains("<title>b (9,007,199,254,740,993 samples, 100.00%)</title>"))
        #expect(fits.err.isEmpty)
    }
}
