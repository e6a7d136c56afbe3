import Foundation
import Testing

@testable import StallAnalysis

/// Counts print exactly and read back: integers up to 2^64-1, fractions in plain decimal, overflow reported.
@Suite struct ExactCountTests {
    /// Folds `text` as a folded file; returns the output and the warnings.
    static func fold(_ text: String, strict: Bool = false) throws -> (String, [String]) {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("exact-\(UUID().uuidString).folded")
        try Data(text.utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        var options = FoldOptions()
        options.folded.strict = strict
        let (stacks, diagnostics) = try Folder.fold([InputSource(path: url.path)], options: options)
        return (stacks.rendered(), diagnostics.warnings)
    }

    @Test func plainDecimalNeverUsesExponents() {
        #expect(CountFormat.plain(0.00001) == "0.00001")
        #expect(CountFormat.plain(1.5e-10) == "0.00000000015")
        #expect(CountFormat.plain(1e20) == "100000000000000000000")
        #expect(CountFormat.plain(123.25) == "123.25")
        #expect(CountFormat.plain(18_446_744_073_709_549_568) == "18446744073709549568")
        #expect(CountFormat.plain(-2.5e-7) == "-0.00000025")
        for value in [0.1, 1e-300, 3.14159e25, 7e-5, 1.0 / 3] {
            let text = CountFormat.plain(value)
            #expect(!text.contains("e") && Double(text) == value, "\(value) -> \(text)")
        }
    }

    @Test func integersUpTo2To64Minus1AreExact() throws {
        let (text, warnings) = try Self.fold("a 18446744073709551615\nb 123456789012345678\nc 9007199254740993\n")
        #expect(text == "a 18446744073709551615\nb 123456789012345678\nc 9007199254740993\n")
        #expect(warnings.isEmpty)
    }

    @Test func foldOfFoldRoundTrips() throws {
        let input = "a 18446744073709551615\nb 0.00001\nc 10000000000000000000.5\nd 2.5\nd 2.5\ne 0.1\ne 0.2\n"
        let (once, onceWarnings) = try Self.fold(input)
        #expect(once.contains("b 0.00001\n") && once.contains("c 10000000000000000000\n") && once.contains("d 5\n"))
        #expect(!once.contains("e+") && !once.contains("e-") && onceWarnings.isEmpty)
        let (twice, warnings) = try Self.fold(once)
        #expect(twice == once)
        #expect(warnings.isEmpty)
    }

    @Test func overflowDropsTheLineWithAWarningOrFailsWhenStrict() throws {
        let input = "a 18446744073709551616\nb 18446744073709551615\nb 1\nc 7\n"
        let (text, warnings) = try Self.fold(input)
        #expect(text == "b 18446744073709551615\nc 7\n")
        #expect(warnings.count == 1 && warnings[0].contains("line 1") && warnings[0].contains("line 3"))
        let failure = FoldFixture.badData { try Self.fold(input, strict: true) }
        #expect(failure?.position == "line 1" && failure?.reason.contains("2^64-1") == true)
    }

    @Test func diffPrintsExactIntegers() {
        var before = FoldedStacks(), after = FoldedStacks()
        before.add(folded: "a", count: 1)
        var text = "a"
        text.withUTF8 { after.add(bytes: UnsafeRawBufferPointer($0), whole: 18_446_744_073_709_551_615) }
        var diagnostics = Diagnostics()
        #expect(StackDiff.diff(before: before, after: after, diagnostics: &diagnostics) == "a 1 18446744073709551615\n")
    }
}
