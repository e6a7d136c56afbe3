import Foundation
import Testing

@testable import StallAnalysis

/// One rule for every count (FoldedCount): integers up to 2^64-1 exactly, fractions as Doubles below 2^64, every
/// stack's sum below 2^64; the folded reader of `fold` and the one of `flamegraph` take and refuse the same lines.
@Suite struct CountLimitTests {
    /// Two counts whose sum is infinite as Doubles, and counts at 2^64 written both ways.
    static let hostile = [
        "inf;a " + String(repeating: "9", count: 308), "inf;b " + String(repeating: "9", count: 308),
        "fraction;a " + String(repeating: "9", count: 308) + ".0", "huge " + String(repeating: "1", count: 400),
        "two64 18446744073709551616", "two64;fraction 18446744073709551616.0", "big;fraction 100000000000000000000.5",
        "max 18446744073709551615", "max 1", "half 10000000000000000000.5", "half 10000000000000000000.5",
        "ok 3", "ok 0.25",
    ].joined(separator: "\n") + "\n"

    static func stream(_ text: String, name: String = "hostile.folded") -> ByteStream {
        ByteStream(bytes: Array(text.utf8), name: name)
    }

    @Test func aCountIsBelow2To64WhicheverWayItIsWritten() {
        #expect(FoldedCount(18_446_744_073_709_551_615.0) == nil)  // the Double is 2^64
        #expect(FoldedCount(.infinity) == nil && FoldedCount(.nan) == nil && FoldedCount(-1) == nil)
        #expect(FoldedCount(2.0) == .whole(2) && FoldedCount(0.5) == .fraction(0.5))
        func digits(_ text: String) -> FoldedCount? {
            var copy = text
            return copy.withUTF8 { FoldedCount(digits: $0) }
        }
        #expect(digits("18446744073709551615") == .whole(.max))
        #expect(digits("018446744073709551615") == .whole(.max))
        #expect(digits("18446744073709551616") == nil && digits(String(repeating: "9", count: 400)) == nil)
        #expect(digits("18446744073709551616.0") == nil && digits("1" + String(repeating: "0", count: 400) + ".5") == nil)
        #expect(digits("3.0") == .whole(3) && digits("1.") == .whole(1))
    }

    @Test func foldRefusesEveryCountAndSumOf2To64WithOneWarning() throws {
        var stacks = FoldedStacks()
        var diagnostics = Diagnostics()
        try FoldedImporter().importStacks(from: Self.stream(Self.hostile), into: &stacks, diagnostics: &diagnostics)
        #expect(stacks.rendered() == "half 10000000000000000000\nmax 18446744073709551615\nok 3.25\n")
        #expect(diagnostics.warnings.count == 1)
        #expect(diagnostics.warnings.first?.hasPrefix("hostile.folded: 9 lines whose count exceeds 2^64-1 skipped (line 1: ")
            == true)
        var strict = FoldedImporter.Options()
        strict.strict = true
        var none = FoldedStacks()
        let failure = FoldFixture.badData {
            try FoldedImporter(options: strict).importStacks(from: Self.stream(Self.hostile), into: &none,
                                                             diagnostics: &diagnostics)
        }
        #expect(failure?.position == "line 1" && failure?.reason.contains("2^64-1") == true)
    }

    @Test func theFlameGraphReaderTakesAndRefusesTheSameLines() throws {
        var profile: [WeightedStack] = []
        var diagnostics = Diagnostics()
        try FoldedImporter().read(Self.stream(Self.hostile), into: &profile, diagnostics: &diagnostics)
        #expect(profile.map(\.stack) == ["max", "half", "ok", "ok"])
        #expect(profile.first?.exact == .max)
        var folded = Diagnostics()
        var stacks = FoldedStacks()
        try FoldedImporter().importStacks(from: Self.stream(Self.hostile), into: &stacks, diagnostics: &folded)
        #expect(diagnostics.warnings == folded.warnings)
        // The graph of what is left: finite widths, the total past 2^64-1 said once.
        var render = Diagnostics()
        let svg = try SVGFlameGraph().render(OrderedStacks(stacks: profile), input: "hostile", diagnostics: &render)
        #expect(svg.contains("<title>max (18,446,744,073,709,551,615 samples, "))
        #expect(!svg.contains("nan") && !svg.contains("inf"))
        #expect(render.warnings == ["the profile's total exceeds 2^64-1: the root's count and the shares are rounded"])
    }

    @Test func aDifferentialLineWithABeforeCountOf2To64IsRefused() throws {
        var profile: [WeightedStack] = []
        var diagnostics = Diagnostics()
        let text = "a 18446744073709551616 5\nb 2 18446744073709551616\nc 1 2\n"
        try FoldedImporter().read(Self.stream(text), into: &profile, diagnostics: &diagnostics)
        #expect(profile == [WeightedStack(stack: "c", count: 2, before: 1)])
        #expect(diagnostics.warnings.first?.contains("2 lines whose count exceeds 2^64-1") == true)
    }

    @Test func theSumOverInputsIsRefusedAlikeInEveryCommand() throws {
        let first = FileManager.default.temporaryDirectory.appendingPathComponent("limit-\(UUID().uuidString).folded")
        let second = FileManager.default.temporaryDirectory.appendingPathComponent("limit-\(UUID().uuidString).folded")
        try Data("a 18446744073709551615\nb 1\n".utf8).write(to: first)
        try Data("a 1\nb 2\n".utf8).write(to: second)
        defer {
            try? FileManager.default.removeItem(at: first)
            try? FileManager.default.removeItem(at: second)
        }
        let inputs = [InputSource(path: first.path), InputSource(path: second.path)]
        let expected = "\(second.path): dropped this input's count of 'a': the sum over the inputs would exceed 2^64-1"
        let (folded, foldWarnings) = try Folder.fold(inputs, options: FoldOptions())
        #expect(folded.rendered() == "a 18446744073709551615\nb 3\n" && foldWarnings.warnings == [expected])
        // report and export add inputs one by one: the same result and warning.
        var diagnostics = Diagnostics()
        guard case .profile(let stacks, _) = try ReportInput.read(inputs, options: FoldOptions(), diagnostics: &diagnostics)
        else { Issue.record("not a profile"); return }
        #expect(stacks.rendered() == folded.rendered() && diagnostics.warnings == [expected])
        let (timeline, exportWarnings) = try Exporter.load(inputs, options: FoldOptions())
        #expect(timeline.sampleCount == 2 && exportWarnings.warnings == [expected])
        // The flame graph keeps lines: the second input's line of `a` goes, as its count does in fold.
        let (profile, graphWarnings) = try ProfileLoader.load(inputs, options: FoldOptions())
        #expect(profile.stacks.map(\.stack) == ["a", "b", "b"] && graphWarnings.warnings == [expected])
    }

    @Test func stacksMadeOneByATransformKeepTheirSumBelow2To64() throws {
        var stacks = FoldedStacks()
        stacks.add(folded: "a;a", count: 18_446_744_073_709_549_568)
        stacks.add(folded: "a", count: 4096)
        var transforms = StackTransforms()
        transforms.mergeRecursion = true
        var diagnostics = Diagnostics()
        let merged = transforms.apply(to: stacks, diagnostics: &diagnostics)
        #expect(merged.rendered() == "a 18446744073709549568\n")
        #expect(diagnostics.warnings.count == 1 && diagnostics.warnings[0].contains("would exceed 2^64-1"))
    }

    @Test func perfPeriodsAndSampleCountsAreCountsToo() throws {
        let event = "app 1 1.0: 18446744073709551615 cpu-clock:\n\t1 main (/app)\n\n"
        var stacks = FoldedStacks()
        var diagnostics = Diagnostics()
        try PerfScriptImporter().importStacks(from: Self.stream(event + event), into: &stacks, diagnostics: &diagnostics)
        #expect(stacks.rendered() == "app;main 18446744073709551615\n")
        #expect(diagnostics.warnings.contains { $0.contains("1 event skipped: the stack's count would exceed 2^64-1") })
    }

    @Test func aHandBuiltInfiniteProfileDrawsNothingInsteadOfTrapping() {
        var diagnostics = Diagnostics()
        let profile = OrderedStacks(stacks: [WeightedStack(stack: "a", count: .greatestFiniteMagnitude),
                                            WeightedStack(stack: "b", count: .greatestFiniteMagnitude)])
        var options = FlameGraphOptions()
        for chart in [false, true] {
            options.flameChart = chart
            let svg = SVGFlameGraph(options: options).render(profile, diagnostics: &diagnostics)
            #expect(svg.contains("No valid input"))
        }
        #expect(diagnostics.warnings.first == "the counts add up to more than a finite number; nothing drawn")
    }
}
