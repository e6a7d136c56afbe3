import Foundation
import StallFormat
import StallTestSupport
import Testing

@testable import StallAnalysis

/// flamegraph.pl's `--factor`, `--total` and `--cp` (the palette map), and inferno's `--skip-after` (perf input).
@Suite struct FlameGraphScaleTests {
    @Test func factorScalesTheTooltipsCountsAsInferno() {
        // inferno's rounding (half away from zero) and share (of the scaled total), checked against its
        // factor-2.5.svg by tools/flamegraph-conformance.py.
        let svg = FlameGraphTests.render(["a;b 1", "a;c 2"]) { $0.factor = 2.5 }
        #expect(svg.frame("all")?.title == "all (8 samples, 100%)")  // 7.5 rounds up
        #expect(svg.frame("b")?.title == "b (3 samples, 40.00%)")  // 2.5 -> 3, of 7.5
        #expect(svg.frame("c")?.title == "c (5 samples, 66.67%)")
        #expect(svg.frame("b")?.width == 1)  // widths stay in counts
    }

    @Test func aLargerTotalSetsTheScaleAndASmallerOneIsIgnoredWithAWarning() throws {
        let svg = FlameGraphTests.render(["a;b 10", "a;c 5"]) { $0.total = 30 }
        #expect(svg.total == 30)
        #expect(svg.frame("all")?.title == "all (30 samples, 100%)" && svg.frame("all")?.width == 30)
        #expect(svg.frame("a")?.title == "a (15 samples, 50.00%)")
        var options = FlameGraphOptions()
        options.total = 10
        var diagnostics = Diagnostics()
        let stacks = ["a;b 10", "a;c 5"].compactMap { FoldedImporter.profileStack(Substring($0)) }
        let smaller = try SVGFlameGraph(options: options).render(OrderedStacks(stacks: stacks), input: "in",
                                                                  diagnostics: &diagnostics)
        #expect(SVGFrames(smaller)?.total == 15)
        #expect(diagnostics.warnings == ["--total 10 is less than the profile's total 15, so ignored"])
        options.total = 0.1  // under 2 % of the profile's: ignored quietly (flamegraph.pl's rule)
        diagnostics = Diagnostics()
        _ = try SVGFlameGraph(options: options).render(OrderedStacks(stacks: stacks), input: "in", diagnostics: &diagnostics)
        #expect(diagnostics.warnings.isEmpty)
    }

    @Test func thePaletteMapGivesColoursByNameAndListsEveryName() {
        let svg = FlameGraphTests.render(["a;b 1", "a;c 2"]) { $0.paletteMap = ["b": "rgb(1,2,3)", "c": "bad"] }
        #expect(svg.frame("b")?.fill == "rgb(1,2,3)")
        let plain = FlameGraphTests.render(["a;b 1", "a;c 2"])
        #expect(svg.frame("c")?.fill == plain.frame("c")?.fill)  // an unusable colour: the usual one
        var options = FlameGraphOptions()
        options.paletteMap = ["b": "rgb(1,2,3)"]
        let stacks = ["a;b 1", "a;c 2"].compactMap { FoldedImporter.profileStack(Substring($0)) }
        let entries = options.paletteEntries(OrderedStacks(stacks: stacks))
        #expect(entries.keys.sorted() == ["a", "b", "c"] && entries["b"] == "rgb(1,2,3)")
        #expect(entries["a"] == plain.frame("a")?.fill)
        #expect(FlameGraphOptions.isPaletteColor("rgb(0,255,9)") && !FlameGraphOptions.isPaletteColor("rgb(0,256,9)"))
    }

    @Test func skipAfterDropsTheCallersOfTheLeafMostMatch() throws {
        let perf = """
            prog 1 1.0: 1 cycles:
            \t1 leaf+0x1 (/a)
            \t2 work+0x1 (/a)
            \t3 junk1+0x1 (/a)

            prog 1 2.0: 1 cycles:
            \t1 leaf+0x1 (/a)
            \t2 work+0x1 (/a)
            \t3 work+0x1 (/a)
            \t4 main+0x1 (/a)

            prog 1 3.0: 1 cycles:
            \t1 other+0x1 (/a)
            \t4 main+0x1 (/a)


            """
        #expect(try FoldFixture.foldBytes(Array(perf.utf8)) == "prog;junk1;work;leaf 1\nprog;main;other 1\nprog;main;work;work;leaf 1\n")
        let skipped = try FoldFixture.foldBytes(Array(perf.utf8)) { $0.perf.skipAfter = ["work"] }
        #expect(skipped == "prog;main;other 1\nprog;work;leaf 2\n")
        let two = try FoldFixture.foldBytes(Array(perf.utf8)) { $0.perf.skipAfter = ["work", "other"] }
        #expect(two == "prog;other 1\nprog;work;leaf 2\n")
    }
}
