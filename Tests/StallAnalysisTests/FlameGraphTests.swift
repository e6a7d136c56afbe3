import Foundation
import StallFormat
import Testing

@testable import StallAnalysis

/// The SVG flame graph, read back structurally: frame names, x and width in counts, depth.
@Suite struct FlameGraphTests {
    static func render(_ lines: [String], _ configure: (inout FlameGraphOptions) -> Void = { _ in }) -> SVGFrames {
        var options = FlameGraphOptions()
        configure(&options)
        let stacks = lines.compactMap { FoldedImporter.profileStack(Substring($0)) }
        var diagnostics = Diagnostics()
        let svg = SVGFlameGraph(options: options).render(OrderedStacks(stacks: stacks), diagnostics: &diagnostics)
        return SVGFrames(svg)!
    }

    static func fixture(_ name: String) throws -> String {
        try #require(Bundle.module.path(forResource: name, ofType: nil, inDirectory: "Fixtures/flamegraph"))
    }

    @Test func framesAreMergedInByteOrder() {
        let svg = Self.render(["a;c 1", "a;b 2", "a 1", "d 4"])
        #expect(svg.total == 8)
        #expect(svg.structure == [
            "a@1 0.0+4.0", "all@0 0.0+8.0", "b@2 1.0+2.0", "c@2 3.0+1.0", "d@1 4.0+4.0",
        ])
        #expect(svg.frame("b")?.title == "b (2 samples, 25.00%)")
        #expect(svg.frame("all")?.title == "all (8 samples, 100%)")
    }

    @Test func duplicateStacksFromSeveralInputsAreSummed() {
        let svg = Self.render(["a;b 2", "a;b 3"])
        #expect(svg.structure == ["a@1 0.0+5.0", "all@0 0.0+5.0", "b@2 0.0+5.0"])
    }

    @Test func textIsEscaped() throws {
        let name = #"Text<"a" & 'b'>.measure"#
        let svg = Self.render(["main;\(name) 5"]) {
            $0.title = #"<&'">"#
            $0.subtitle = "a & b"
            $0.notes = "x -- <y>"
        }
        #expect(svg.frame(name)?.title == "\(name) (5 samples, 100.00%)")
        #expect(svg.frame(name)?.label == name)
        #expect(svg.texts["title"] == #"<&'">"#)
        #expect(svg.texts["subtitle"] == "a & b")
        #expect(svg.comments.contains { $0 == "NOTES: x - - &lt;y&gt;" })  // comments take no "--"
    }

    @Test func controlCharactersAndTrailingDashesKeepTheSVGWellFormed() throws {
        var options = FlameGraphOptions()
        options.title = "a\u{1B}b"
        options.notes = "x-"
        options.nameType = "a\rb"
        var diagnostics = Diagnostics()
        let profile = OrderedStacks(stacks: [WeightedStack(stack: "main;a\u{1}b\u{FFFF}", count: 3)])
        let text = SVGFlameGraph(options: options).render(profile, diagnostics: &diagnostics)
        let svg = try #require(SVGFrames(text), "the SVG must be well-formed XML")
        #expect(svg.frame("a\u{FFFD}b\u{FFFD}") != nil)
        #expect(svg.texts["title"] == "a\u{FFFD}b")
        #expect(svg.comments.contains("NOTES: x- "))
        #expect(!text.contains("\r"))
    }

    @Test func countsTooLargeForADoubleAreNotCounts() {
        #expect(FoldedImporter.profileStack(Substring("a;b " + String(repeating: "9", count: 400))) == nil)
        let precise = FoldedImporter.profileStack(Substring("a;c 1." + String(repeating: "0", count: 400) + "5"))
        #expect(precise?.count == 1)
        #expect(FoldedImporter.profileStack(Substring("a;b 12345678901234567"))?.count == 12345678901234567)
    }

    @Test func labelsAreTruncatedOrLeftOut() {
        let long = String(repeating: "x", count: 400)
        let svg = Self.render(["\(long) 99", "short 1"]) { $0.minWidth = .pixels(0) }
        let label = svg.frame(long)?.label ?? ""
        #expect(label.hasSuffix("..") && label.count < long.count)
        #expect(svg.frame("short")?.label == nil)  // 11.8 px: no room for 3 characters, no text node
    }

    @Test func narrowFramesArePruned() {
        let lines = ["big 100000", "tiny 1", "small;child 100"]
        #expect(Self.render(lines).frame("tiny") == nil)  // 0.012 px < 0.1 px
        #expect(Self.render(lines) { $0.minWidth = .pixels(0) }.frame("tiny") != nil)
        let percent = Self.render(lines) { $0.minWidth = .percent(0.5) }
        #expect(percent.frame("small") == nil && percent.frame("child") == nil && percent.frame("big") != nil)
    }

    @Test func reverseInvertedAndFlameChart() {
        let reversed = Self.render(["a;b 1", "c;b 2"]) { $0.reverse = true }
        #expect(reversed.structure == ["a@2 0.0+1.0", "all@0 0.0+3.0", "b@1 0.0+3.0", "c@2 1.0+2.0"])

        let inverted = Self.render(["a;b 1"]) { $0.inverted = true }
        #expect(inverted.frame("all")!.y < inverted.frame("b")!.y)
        #expect(inverted.structure == ["a@1 0.0+1.0", "all@0 0.0+1.0", "b@2 0.0+1.0"])

        // A flame chart keeps the input order (reversed, as flamegraph.pl) and does not merge across time.
        let chart = Self.render(["a 1", "b 1", "a 1"]) { $0.flameChart = true }
        #expect(chart.structure == ["a@1 0.0+1.0", "a@1 2.0+1.0", "all@0 0.0+3.0", "b@1 1.0+1.0"])
    }

    @Test func differentialColoursAndTooltips() {
        let lines = ["main;grew 1 9", "main;shrank 9 1", "main;same 5 5"]
        let svg = Self.render(lines)
        #expect(svg.total == 15)
        #expect(svg.frame("grew")?.fill == "rgb(255,50,50)")  // +53 %: the deepest shade
        #expect(svg.frame("shrank")?.fill == "rgb(50,50,255)")
        #expect(svg.frame("same")?.fill == "rgb(250,250,250)")
        #expect(svg.frame("grew")?.title == "grew (9 samples, 60.00%; +53.33%)")
        #expect(svg.frame("shrank")?.title == "shrank (1 samples, 6.67%; -53.33%)")
        let negated = Self.render(lines) { $0.negate = true }
        #expect(negated.frame("grew")?.fill == "rgb(50,50,255)")
        #expect(negated.frame("shrank")?.title == "shrank (1 samples, 6.67%; +53.33%)")
    }

    @Test func coloursAreDeterministicAndGreyForDashes() {
        var diagnostics = Diagnostics()
        let profile = OrderedStacks(stacks: [WeightedStack(stack: "a;b;-", count: 3), WeightedStack(stack: "a;--", count: 2)])
        for hash in [false, true] {
            var options = FlameGraphOptions()
            options.hash = hash
            let first = SVGFlameGraph(options: options).render(profile, diagnostics: &diagnostics)
            #expect(first == SVGFlameGraph(options: options).render(profile, diagnostics: &diagnostics))
        }
        let svg = Self.render(["a;b;- 3", "a;-- 2"])
        #expect(svg.frame("-")?.fill == "rgb(200,200,200)")
        #expect(svg.frame("--")?.fill == "rgb(160,160,160)")
        #expect(FrameColors.resolve(.java, "java/lang/Thread.run_[j]") == .green)
        #expect(FrameColors.resolve(.java, "tcp_sendmsg_[k]") == .orange)
        #expect(FrameColors.resolve(.js, "node::Start") == .yellow)
        #expect(FrameColors.resolve(.perl, "Perl_pp_entersub") == .green)
    }

    @Test func emptyInputGivesAnErrorSVG() {
        var diagnostics = Diagnostics()
        let svg = SVGFlameGraph().render(OrderedStacks(), diagnostics: &diagnostics)
        #expect(SVGFrames(svg)?.frames.isEmpty == true)
        #expect(svg.contains("ERROR: No valid input"))
        #expect(diagnostics.warnings == ["no stack counts found"])
    }

    @Test func foldedFixtureLoadsWithAWarning() throws {
        let path = try Self.fixture("layout-stall.folded")
        let (profile, diagnostics) = try ProfileLoader.load([InputSource(path: path)], options: FoldOptions())
        #expect(profile.stacks.count == 4)
        #expect(profile.total == 101)
        #expect(diagnostics.warnings.count == 1)
        #expect(diagnostics.warnings.first?.contains("1 unrecognized line skipped (line 6") == true)
        var renderDiagnostics = Diagnostics()
        let svg = try #require(SVGFrames(SVGFlameGraph().render(profile, diagnostics: &renderDiagnostics)))
        let layout = try #require(svg.frame("CALayer.layout"))
        #expect(layout.width == 90 && layout.depth == 3)
        #expect(svg.frames.filter { $0.name == #"Text<"a" & b>.measure"# }.map(\.depth).sorted() == [4, 5])
    }

    @Test func captureSamplesCanBeLimitedToAWindow() {
        let begin = StallBeginRecord(stallID: 1, startNs: 1_000_000, detectedNs: 2_000_000, threadID: 1)
        let samples = [10, 200, 400].map {
            Sample(timestampNs: 1_000_000 + UInt64($0) * 1_000_000, threadCPUNs: 0, flags: [], frames: [0x1000])
        }
        let capture = Capture(source: "test", stalls: [Stall(begin: begin, samples: samples)])
        var options = StallCaptureImporter.Options()
        options.selection.window = 100_000_000...300_000_000
        var stacks = FoldedStacks()
        var diagnostics = Diagnostics()
        StallCaptureImporter(options: options).fold(capture, into: &stacks, diagnostics: &diagnostics)
        #expect(stacks.total == 1)
    }

    @Test func minWidthAndBackgroundParse() {
        #expect(MinWidth(parsing: "0.5%") == .percent(0.5))
        #expect(MinWidth(parsing: "2") == .pixels(2))
        #expect(MinWidth(parsing: "x") == nil && MinWidth(parsing: "-1") == nil)
        #expect(FlameGraphBackground(parsing: "#ffeedd") == .flat("#ffeedd"))
        #expect(FlameGraphBackground(parsing: "#ffee") == nil)
        #expect(fixed(1.23456, 4) == "1.2346" && fixed(-0.004, 2) == "0.00" && fixed(10, 0) == "10")
        #expect(grouped(1_234_567) == "1,234,567" && grouped(999) == "999")
    }
}
