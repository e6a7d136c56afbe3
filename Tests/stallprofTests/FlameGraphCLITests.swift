import Foundation
import StallTestSupport
import Testing

/// `stallprof flamegraph` and `stallprof diff` as a user runs them: standard input and output, `-o`, exit codes.
@Suite struct FlameGraphCLITests {
    static func fixture(_ name: String) -> String { CLI.fixture("flamegraph/" + name) }

    /// Runs stallprof with `arguments` and `input` on standard input; returns the exit code, stdout and stderr.
    static func run(_ arguments: [String], input: String = "") throws -> (Int32, String, String) {
        try CLI.run(arguments, input: input)
    }

    @Test func drawsFromStandardInputToStandardOutput() throws {
        let (status, svg, _) = try Self.run(["flamegraph", "--title", "a<b", "-"], input: "main;work 3\nmain 1\n")
        #expect(status == 0)
        let frames = try #require(SVGFrames(svg))
        #expect(frames.texts["title"] == "a<b")
        #expect(frames.structure == ["all@0 0.0+4.0", "main@1 0.0+4.0", "work@2 1.0+3.0"])
    }

    @Test func writesTheOutputFileAndMapsOptions() throws {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("fg-cli-\(getpid()).svg").path
        defer { try? FileManager.default.removeItem(atPath: out) }
        let (status, stdout, stderr) = try Self.run(
            ["flamegraph", "--inverted", "--minwidth", "0", "--colors", "mem", "--bgcolors", "#102030",
             Self.fixture("layout-stall.folded"), "-o", out])
        #expect(status == 0 && stdout.isEmpty)
        #expect(stderr.contains("1 unrecognized line skipped (line 6"))
        let svg = try String(contentsOfFile: out, encoding: .utf8)
        let frames = try #require(SVGFrames(svg))
        #expect(frames.texts["title"] == "Icicle Graph")
        #expect(frames.frame("all")!.y < frames.frame("main")!.y)
        #expect(svg.contains("stop-color=\"#102030\""))
    }

    /// `--cp` keeps a function's colour across graphs through the palette file, written after each graph; a colour
    /// edited in the file is drawn; `--factor` and `--total` as flamegraph.pl's.
    @Test func aPaletteFileKeepsColoursAcrossGraphs() throws {
        let palette = CLI.temporary("palette.map")
        defer { unlink(palette) }
        let (first, svg, _) = try Self.run(["flamegraph", "--palette-file", palette, "-"], input: "main;work 3\nmain 1\n")
        #expect(first == 0)
        let saved = try String(contentsOfFile: palette, encoding: .utf8)
        let work = try #require(SVGFrames(svg)?.frame("work")?.fill)
        #expect(saved == "main->\(try #require(SVGFrames(svg)?.frame("main")?.fill))\nwork->\(work)\n")
        try (saved.replacingOccurrences(of: "work->\(work)", with: "work->rgb(1,2,3)") + "junk\n")
            .write(toFile: palette, atomically: true, encoding: .utf8)
        let (second, again, warning) = try Self.run(["flamegraph", "--palette-file", palette, "--factor", "10",
                                                     "--total", "8", "-"], input: "main;work 3\nother 1\n")
        #expect(second == 0 && warning.contains("1 line not NAME->rgb(R,G,B), ignored"), "\(warning)")
        let frames = try #require(SVGFrames(again))
        #expect(frames.frame("work")?.fill == "rgb(1,2,3)")
        #expect(frames.frame("work")?.title == "work (30 samples, 37.50%)" && frames.total == 8)
        #expect(try String(contentsOfFile: palette, encoding: .utf8).contains("other->rgb("))
        for bad in [["--factor", "0"], ["--factor", "x"], ["--total", "-1"]] {
            #expect(try Self.run(["flamegraph"] + bad + ["-"], input: "a 1\n").0 == 64, "\(bad)")
        }
    }

    @Test func exitCodes() throws {
        #expect(try Self.run(["flamegraph", "--colors", "plaid", "-"]).0 == 64)
        #expect(try Self.run(["flamegraph", "--minwidth", "wide", "-"]).0 == 64)
        #expect(try Self.run(["diff", Self.fixture("before.folded")]).0 == 64)
        // An empty input: a warning naming it, the "no valid input" graph, exit 0 (as every command).
        let (empty, svg, stderr) = try Self.run(["flamegraph", "-"], input: "")
        #expect(empty == 0 && svg.contains("ERROR: No valid input") && stderr.contains("<stdin>: empty input"))
        #expect(try Self.run(["flamegraph", "-"], input: "this is not a profile\n").0 == 65)
        // A missing input is no input (sysexits' EX_NOINPUT, 66), as for fold, and the message names it.
        let (missing, _, missingError) = try Self.run(["flamegraph", "/nonexistent/file"])
        #expect(missing == 66 && missingError.contains("/nonexistent/file"))
    }

    @Test func diffThenDifferentialGraph() throws {
        let (status, diff, _) = try Self.run(
            ["diff", "--strip-hex", Self.fixture("before.folded"), Self.fixture("after.folded")])
        #expect(status == 0)
        #expect(diff.split(separator: "\n").contains("main;0x...;decode 5 5"))
        let (drawn, svg, _) = try Self.run(["flamegraph", "--negate", "-"], input: diff)
        #expect(drawn == 0)
        let frames = try #require(SVGFrames(svg))
        #expect(frames.frame("tap")?.fill.hasSuffix(",255)") == true)  // grew, negated: blue
        #expect(frames.frame("tap")?.title == "tap (70 samples, 66.67%; -28.57%)")
    }
}
