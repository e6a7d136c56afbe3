import Foundation
import StallFormat
import Testing

@testable import StallAnalysis

/// Outputs compared with the golden files under Fixtures/golden (``Golden``): fold of every input format, the
/// report as text and JSON, diff, and the flame graph's structure. `STALLPROF_BLESS=1 swift test` rewrites them.
@Suite struct GoldenFileTests {
    /// Input fixture and golden name: one per input format (and the folded reader's edge cases).
    static let foldCases: [(input: String, golden: String)] = [
        ("perf-script.txt", "fold/perf-script"),
        ("sample-report.txt", "fold/sample-report"),
        ("folded-mixed.txt", "fold/folded-mixed"),
        ("folded/pyspy-raw.folded", "fold/pyspy-raw"),
        ("speedscope/pyspy-sampled.json", "fold/speedscope-pyspy-sampled"),
        ("speedscope/pyinstrument-evented.json", "fold/speedscope-pyinstrument-evented"),
    ]

    @Test(arguments: foldCases.indices) func fold(_ index: Int) throws {
        let (input, golden) = Self.foldCases[index]
        Golden.check(try FoldFixture.fold([input]).text, golden)
    }

    /// The report's synthetic capture, with a fixed executable path and source name so the output does not depend
    /// on where the tests were built.
    static func mixedCapture() throws -> Capture {
        var records = ReportFixtures.mixedRecords()
        if case .process(var process) = records[0] {
            process.executable = "/app/fixture"
            records[0] = .process(process)
        }
        let path = try ReportFixtures.write(records, name: "golden")
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try CaptureReader.parse(CaptureReader.readWholeFile(path), source: "mixed.stalls")
    }

    @Test func foldOfACapture() throws {
        var stacks = FoldedStacks()
        var diagnostics = Diagnostics()
        StallCaptureImporter().fold(try Self.mixedCapture(), into: &stacks, diagnostics: &diagnostics)
        Golden.check(stacks.rendered(), "fold/capture-mixed")
    }

    @Test func reportText() throws { Golden.check(StallReport(captures: [try Self.mixedCapture()]).text(), "report/mixed-text") }

    @Test func reportJSON() throws { Golden.check(StallReport(captures: [try Self.mixedCapture()]).json(), "report/mixed-json") }

    static func flameGraphInput(_ name: String) -> String { FoldFixture.path("flamegraph/" + name) }

    static func diff(_ options: DiffOptions = DiffOptions()) throws -> String {
        let load = { (name: String) in
            try ProfileLoader.load([InputSource(path: flameGraphInput(name))], options: FoldOptions()).0.folded
        }
        var diagnostics = Diagnostics()
        return StackDiff.diff(before: try load("before.folded"), after: try load("after.folded"), options: options,
                              diagnostics: &diagnostics)
    }

    @Test func diffOfTwoProfiles() throws { Golden.check(try Self.diff(), "diff/before-after") }

    @Test func diffNormalizedWithoutAddresses() throws {
        var options = DiffOptions()
        options.normalize = true
        options.stripHex = true
        Golden.check(try Self.diff(options), "diff/before-after-normalize-strip-hex")
    }

    /// The frames of a flame graph, one line each in drawing order (depth, then left to right): depth, start and
    /// width in counts (`fg:x`, `fg:w`), name; then the total. Not the whole SVG: script, colours and tooltips
    /// change on their own.
    static func structure(_ profile: OrderedStacks, _ options: FlameGraphOptions = FlameGraphOptions()) throws -> String {
        var diagnostics = Diagnostics()
        let svg = try #require(SVGFrames(SVGFlameGraph(options: options).render(profile, diagnostics: &diagnostics)))
        let lines = svg.frames.sorted { ($0.depth, $0.x) < ($1.depth, $1.x) }.map {
            "\($0.depth) \(CountFormat.plain($0.x))+\(CountFormat.plain($0.width)) \($0.name)"
        }
        return "total \(CountFormat.plain(svg.total))\n" + lines.joined(separator: "\n") + "\n"
    }

    static func profile(_ path: String) throws -> OrderedStacks {
        try ProfileLoader.load([InputSource(path: path)], options: FoldOptions()).0
    }

    @Test func flameGraphStructure() throws {
        Golden.check(try Self.structure(Self.profile(Self.flameGraphInput("layout-stall.folded"))),
                     "flamegraph/layout-stall")
        var inverted = FlameGraphOptions()
        inverted.reverse = true
        Golden.check(try Self.structure(Self.profile(Self.flameGraphInput("layout-stall.folded")), inverted),
                     "flamegraph/layout-stall-reverse")
    }

    /// py-spy's raw output: the empty stack widens the root (total 8) and draws no frame.
    @Test func flameGraphOfEmptyStacks() throws {
        Golden.check(try Self.structure(Self.profile(FoldFixture.path("folded/pyspy-raw.folded"))),
                     "flamegraph/pyspy-raw")
    }

    @Test func differentialFlameGraphStructure() throws {
        let stacks = try Self.diff().split(separator: "\n").compactMap { FoldedImporter.profileStack($0) }
        Golden.check(try Self.structure(OrderedStacks(stacks: stacks)), "flamegraph/differential")
    }
}

/// The harness itself: a mismatch fails with a unified diff and leaves the actual output beside the expected file.
@Suite struct GoldenHarnessTests {
    @Test func aMismatchRecordsADiffAndWritesTheActualFile() throws {
        guard !Golden.blessing else { return }  // blessing would accept the mismatch
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("golden-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("x"), withIntermediateDirectories: true)
        try "a\nb\nc\n".write(to: directory.appendingPathComponent("x/case.expected"), atomically: true, encoding: .utf8)
        withKnownIssue {
            Golden.check("a\nB\nc\n", "x/case", in: directory)
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains("@@ -1,4 +1,4 @@\n a\n-b\n+B\n c\n") }
        }
        let actual = directory.appendingPathComponent("x/case.actual")
        #expect(try String(contentsOf: actual, encoding: .utf8) == "a\nB\nc\n")
        Golden.check("a\nb\nc\n", "x/case", in: directory)  // a match removes the stale .actual
        #expect(!FileManager.default.fileExists(atPath: actual.path))
    }

    @Test func unifiedDiffHunksKeepThreeLinesOfContext() {
        let old = (1...12).map { "line \($0)" }.joined(separator: "\n") + "\n"
        let new = old.replacingOccurrences(of: "line 2\n", with: "").replacingOccurrences(of: "line 11", with: "eleven")
        #expect(Golden.unifiedDiff(old, new, from: "e", to: "a") == """
            --- e
            +++ a
            @@ -1,5 +1,4 @@
             line 1
            -line 2
             line 3
             line 4
             line 5
            @@ -8,6 +7,6 @@
             line 8
             line 9
             line 10
            -line 11
            +eleven
             line 12
             

            """)
    }
}
