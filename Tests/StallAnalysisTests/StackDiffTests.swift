import Foundation
import Testing

@testable import StallAnalysis

/// `stallprof diff`: two profiles into `stack before after` lines.
@Suite struct StackDiffTests {
    static func load(_ name: String) throws -> FoldedStacks {
        let path = try #require(Bundle.module.path(forResource: name, ofType: nil, inDirectory: "Fixtures/flamegraph"))
        return try ProfileLoader.load([InputSource(path: path)], options: FoldOptions()).0.folded
    }

    @Test func unionOfStacksWithZerosForMissingOnes() throws {
        var diagnostics = Diagnostics()
        let text = StackDiff.diff(before: try Self.load("before.folded"), after: try Self.load("after.folded"),
                                  diagnostics: &diagnostics)
        // The whole output: Fixtures/golden/diff/before-after.expected.
        #expect(text.contains("main;0x7fab00;decode 5 0\nmain;0x7fcd00;decode 0 5\n"))
        #expect(diagnostics.warnings.isEmpty)
    }

    @Test func stripHexMergesMovedAddresses() throws {
        var options = DiffOptions()
        options.stripHex = true
        var diagnostics = Diagnostics()
        let text = StackDiff.diff(before: try Self.load("before.folded"), after: try Self.load("after.folded"),
                                  options: options, diagnostics: &diagnostics)
        #expect(text.contains("main;0x...;decode 5 5\n"))
        #expect(!text.contains("0x7f"))
    }

    @Test func normalizeScalesBeforeToAfterTotal() {
        var before = FoldedStacks(), after = FoldedStacks()
        before.add(folded: "a", count: 10)
        before.add(folded: "b", count: 30)
        after.add(folded: "a", count: 40)
        after.add(folded: "b", count: 40)
        var options = DiffOptions()
        options.normalize = true
        var diagnostics = Diagnostics()
        #expect(StackDiff.diff(before: before, after: after, options: options, diagnostics: &diagnostics)
            == "a 20 40\nb 60 40\n")
    }

    @Test func fractionalCountsAreTruncatedWithAWarning() {
        var before = FoldedStacks(), after = FoldedStacks()
        before.add(folded: "a", count: 11.98)
        after.add(folded: "a", count: 3)
        var diagnostics = Diagnostics()
        #expect(StackDiff.diff(before: before, after: after, diagnostics: &diagnostics) == "a 11 3\n")
        #expect(diagnostics.warnings.count == 1)
    }

    @Test func diffOutputDrawsAsADifferentialGraph() throws {
        var diagnostics = Diagnostics()
        let text = StackDiff.diff(before: try Self.load("before.folded"), after: try Self.load("after.folded"),
                                  diagnostics: &diagnostics)
        let stacks = text.split(separator: "\n").compactMap { FoldedImporter.profileStack($0) }
        #expect(stacks.allSatisfy { $0.before != nil })
        let svg = try #require(SVGFrames(SVGFlameGraph().render(OrderedStacks(stacks: stacks), diagnostics: &diagnostics)))
        #expect(svg.total == 105)  // width from AFTER
        #expect(svg.frame("tap")?.fill.hasPrefix("rgb(255,") == true)  // grew: red
        #expect(svg.frame("measure")?.fill.hasSuffix(",255)") == true)  // shrank: blue
    }

    /// 20,000 stacks a side, 15,000 shared: every line is right (the quadratic version took minutes here).
    @Test func largeInputsDiffEveryStack() {
        var before = FoldedStacks(), after = FoldedStacks()
        for index in 0..<20_000 { before.add(folded: "main;module\(index % 97);fn\(index)", count: Double(index + 1)) }
        for index in 5_000..<25_000 { after.add(folded: "main;module\(index % 97);fn\(index)", count: 7) }
        var diagnostics = Diagnostics()
        let lines = StackDiff.diff(before: before, after: after, diagnostics: &diagnostics).split(separator: "\n")
        #expect(lines.count == 25_000)
        #expect(lines == lines.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
        let byStack = Dictionary(uniqueKeysWithValues: lines.map { line -> (String, String) in
            let parts = line.split(separator: " ")
            return (String(parts[0]), "\(parts[1]) \(parts[2])")
        })
        #expect(byStack["main;module0;fn0"] == "1 0")
        #expect(byStack["main;module\(4_999 % 97);fn4999"] == "5000 0")
        #expect(byStack["main;module\(5_000 % 97);fn5000"] == "5001 7")
        #expect(byStack["main;module\(19_999 % 97);fn19999"] == "20000 7")
        #expect(byStack["main;module\(24_999 % 97);fn24999"] == "0 7")
        #expect(diagnostics.warnings.isEmpty)
    }
}
