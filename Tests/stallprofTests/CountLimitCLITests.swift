import Foundation
import Testing

/// Every command reads folded counts alike: a count of 2^64 or more, or two counts whose sum is infinite as
/// Doubles (two 308-digit numbers, which made `flamegraph` trap), is skipped with the same warning (exit 65 with
/// `--strict`), and no command ends in a signal.
@Suite struct CountLimitCLITests {
    /// Every command that reads folded input, with its arguments before the input (diff: BEFORE is a small file).
    static let commands: [[String]] = [
        ["fold"], ["flamegraph"], ["flamegraph", "--flamechart"], ["flamegraph", "--inverted", "--reverse"],
        ["diff", "BEFORE"], ["diff", "--normalize", "BEFORE"], ["report"], ["report", "--json"],
        ["export", "--format", "speedscope"], ["export", "--format", "chrome-trace"],
        ["export", "--format", "pprof", "-o", "/dev/null"],
    ]

    static let nines = String(repeating: "9", count: 308)

    /// Runs `command` on a folded file holding `text`.
    static func run(_ command: [String], _ text: String, strict: Bool = false) throws -> CLI.Result {
        let input = try CLI.temporary(Array(text.utf8), suffix: ".folded")
        let before = try CLI.temporary(Array("ok 1\n".utf8), suffix: ".folded")
        defer {
            unlink(input)
            unlink(before)
        }
        let arguments = command.map { $0 == "BEFORE" ? before : $0 } + (strict ? ["--strict"] : []) + [input]
        return try CLI.run(arguments)
    }

    @Test(arguments: commands)
    func countsWhoseSumIsInfiniteAreSkippedWithAWarning(command: [String]) throws {
        let result = try Self.run(command, "a;b \(Self.nines)\na;c \(Self.nines).5\nok 3\n")
        #expect(result.status == 0, "\(command): \(result.err)")
        #expect(result.err.contains("2 lines whose count exceeds 2^64-1 skipped (line 1: "), "\(command): \(result.err)")
        #expect(!result.err.contains("Fatal error") && !result.err.contains("inf"))
        if command[0] == "fold" { #expect(result.out == "ok 3\n") }
        if command[0] == "flamegraph" {
            #expect(result.out.contains("<title>ok (3 samples, 100.00%)</title>") && !result.out.contains(">a ("))
        }
        let strict = try Self.run(command, "a;b \(Self.nines)\na;c \(Self.nines)\nok 3\n", strict: true)
        #expect(strict.status == 65 && strict.err.contains("line 1") && strict.err.contains("2^64-1"),
                "\(command): \(strict.err)")
    }

    @Test(arguments: commands)
    func aCountOf2To64IsSkippedAndTheSumOfAStackStaysBelowIt(command: [String]) throws {
        let result = try Self.run(command, "big 18446744073709551616\nmax 18446744073709551615\nmax 1\nok 3\n")
        #expect(result.status == 0, "\(command): \(result.err)")
        #expect(result.err.contains("2 lines whose count exceeds 2^64-1 skipped (line 1: \"big 18446744073709551616\"; "
            + "line 3: \"max 1\")"), "\(command): \(result.err)")
        if command[0] == "fold" { #expect(result.out == "max 18446744073709551615\nok 3\n") }
        if command[0] == "flamegraph" {
            // Not drawn, as every other command drops it (it was drawn before).
            #expect(!result.out.contains(">big (") && result.out.contains("<title>max (18,446,744,073,709,551,615 "))
        }
        if command == ["report"] { #expect(result.out.contains("18446744073709551615") && !result.out.contains("big")) }
    }

    @Test(arguments: commands)
    func onlyRefusedCountsEndWithoutASignal(command: [String]) throws {
        let result = try Self.run(command, "a \(Self.nines)\nb \(Self.nines)\n")
        // fold and diff print what is left (nothing); the others say there is no stack count; none traps.
        let expected: Int32 = command[0] == "fold" || command[0] == "diff" ? 0 : 65
        #expect(result.status == expected, "\(command): \(result.err)")
        #expect(result.err.contains("2 lines whose count exceeds 2^64-1"), "\(command): \(result.err)")
    }

    @Test func diffNormalizedPast2To64MinusOneIsWrittenAsTheLargestCount() throws {
        let before = try CLI.temporary(Array("a 1\nb 1\n".utf8), suffix: ".folded")
        let after = try CLI.temporary(Array("a 18446744073709551615\nb 18446744073709551615\n".utf8), suffix: ".folded")
        defer {
            unlink(before)
            unlink(after)
        }
        let result = try CLI.run(["diff", "--normalize", before, after])
        #expect(result.status == 0)
        #expect(result.out == "a 18446744073709551615 18446744073709551615\nb 18446744073709551615 18446744073709551615\n")
        #expect(result.err.contains("2 normalized BEFORE counts past 2^64-1 written as 18446744073709551615"))
        // What diff writes, flamegraph reads back without a warning about a count.
        let diffed = try CLI.temporary(result.bytes, suffix: ".folded")
        defer { unlink(diffed) }
        let graph = try CLI.run(["flamegraph", diffed])
        #expect(graph.status == 0 && !graph.err.contains("count exceeds"), "\(graph.err)")
    }
}
