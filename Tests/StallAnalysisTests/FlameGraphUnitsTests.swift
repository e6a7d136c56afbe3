import Foundation
import StallFormat
import Testing

@testable import StallAnalysis

/// Tooltips in the profile's unit, the embedded script, the "ic" toggle and the differential colour scale.
@Suite struct FlameGraphUnitsTests {
    /// `text` written to a temporary file, loaded as the flame graph command loads it, drawn with `configure`.
    static func draw(_ text: String, fold: (inout FoldOptions) -> Void = { _ in },
                     options configure: (inout FlameGraphOptions) -> Void = { _ in }) throws -> (SVGFrames, CountUnit?) {
        let path = NSTemporaryDirectory() + "stallprof-units-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        var foldOptions = FoldOptions()
        fold(&foldOptions)
        let (profile, _) = try ProfileLoader.load([InputSource(path: path)], options: foldOptions)
        var options = FlameGraphOptions()
        configure(&options)
        var diagnostics = Diagnostics()
        let svg = SVGFlameGraph(options: options).render(profile, diagnostics: &diagnostics)
        return (try #require(SVGFrames(svg)), profile.unit)
    }

    /// Two perf script samples of `event` with periods 250,000 and 750,000.
    static func perf(_ event: String) -> String {
        """
        app 42/42 [000] 1.000001:     250000 \(event): 
        \t    1000 work (/opt/app)
        \t    2000 main (/opt/app)

        app 42/42 [000] 1.000002:     750000 \(event): 
        \t    3000 idle (/opt/app)
        \t    2000 main (/opt/app)


        """
    }

    @Test func perfPeriodsOfCpuClockPrintAsTime() throws {
        let (svg, unit) = try Self.draw(Self.perf("cpu-clock:u"))
        #expect(unit == .time(nanosecondsPerCount: 1))
        #expect(svg.frame("all")?.title == "all (1.00 ms, 100%)")
        #expect(svg.frame("work")?.title == "work (250 µs, 25.00%)")
        #expect(svg.frame("idle")?.title == "idle (750 µs, 75.00%)")
    }

    @Test func perfPeriodsOfOtherEventsAreNamedAfterTheEvent() throws {
        let (svg, unit) = try Self.draw(Self.perf("cycles:ppp"))
        #expect(unit == .named("cycles"))
        #expect(svg.frame("work")?.title == "work (250,000 cycles, 25.00%)")
        #expect(!svg.frames.contains { $0.title.contains("samples") })
    }

    @Test func perfCountedBySampleSaysSamples() throws {
        let (svg, unit) = try Self.draw(Self.perf("cycles:u"), fold: { $0.perf.countSamples = true })
        #expect(unit == .samples)
        #expect(svg.frame("work")?.title == "work (1 samples, 50.00%)")
    }

    @Test func speedscopeCountsAreInTheFilesUnit() throws {
        func document(_ unit: String) -> String {
            #"{"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{"frames":[{"name":"main"},"#
                + #"{"name":"load"}]},"profiles":[{"type":"sampled","name":"p","unit":"\#(unit)","startValue":0,"#
                + #""endValue":3,"samples":[[0,1],[0]],"weights":[2.5,0.5]}]}"#
        }
        let (seconds, unit) = try Self.draw(document("milliseconds"))
        #expect(unit == .time(nanosecondsPerCount: 1_000_000))
        #expect(seconds.frame("load")?.title == "load (2.50 ms, 83.33%)")
        let (bytes, _) = try Self.draw(document("bytes"))
        #expect(bytes.frame("load")?.title == "load (2.5 bytes, 83.33%)")
        let (plain, none) = try Self.draw(document("none"))
        #expect(none == nil)
        #expect(plain.frame("load")?.title == "load (2.5 samples, 83.33%)")
    }

    @Test func countNameOverridesTheUnitAndFoldedTextSaysSamples() throws {
        let (named, _) = try Self.draw(Self.perf("cpu-clock"), options: { $0.countName = "ticks" })
        #expect(named.frame("work")?.title == "work (250,000 ticks, 25.00%)")
        let (folded, unit) = try Self.draw("main;work 3\nmain;idle 1\n")
        #expect(unit == nil)
        #expect(folded.frame("work")?.title == "work (3 samples, 75.00%)")
    }

    @Test func unitsCombineAndDurationsKeepThreeDigits() {
        #expect(CountUnit.combined(nil, .samples) == .samples)
        #expect(CountUnit.combined(.named("cycles"), .named("cycles")) == .named("cycles"))
        #expect(CountUnit.combined(.samples, .time(nanosecondsPerCount: 1)) == .named("counts"))
        let ns = CountUnit.time(nanosecondsPerCount: 1)
        #expect(ns.duration(950) == "950 ns")
        #expect(ns.duration(1_234) == "1.23 µs")
        #expect(ns.duration(99_960) == "100 µs")
        #expect(ns.duration(12_345_678) == "12.3 ms")
        #expect(ns.duration(61_000_000_000) == "61.0 s")
        #expect(CountUnit.samples.duration(5) == nil)
        #expect(CountUnit.perfPeriods(of: "task-clock") == ns)
        #expect(CountUnit.perfPeriods(of: "instructions:u") == .named("instructions"))
    }

    /// The script is FlameGraphScript.js byte for byte (embedded at build time) and can sit in a CDATA section.
    @Test func theScriptIsTheJavaScriptFileEmbedded() throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/StallAnalysis/FlameGraph/FlameGraphScript.js")
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(FlameGraphScript.source == text)
        #expect(!text.contains("]]>"))
        var diagnostics = Diagnostics()
        let svg = SVGFlameGraph().render(OrderedStacks(stacks: [WeightedStack(stack: "a;b", count: 1)]),
                                         diagnostics: &diagnostics)
        #expect(svg.contains("<![CDATA[\n" + "var fg_nametype") && svg.contains(text + "]]></script>"))
    }

    /// flamegraph.pl's "ic" button: drawn right of Search, and the script searches with the `i` flag when on.
    @Test func theIgnoreCaseToggleIsDrawnAndScripted() throws {
        let (svg, _) = try Self.draw("main;Work 1\n")
        #expect(svg.texts["ignorecase"] == "ic")
        #expect(svg.texts["search"] == "Search")
        let script = FlameGraphScript.source
        #expect(script.contains(#"new RegExp(term, fg_ignorecase ? "i" : "")"#))
        #expect(script.contains(#"p.i === "1""#) && script.contains(#"i: fg_ignorecase ? "1" : null"#))
        #expect(script.contains(#"e.target.id === "ignorecase""#) && script.contains("e.keyCode === 73"))
    }

    /// The distance of a colour from the neutral (250,250,250), largest channel difference.
    static func distanceFromNeutral(_ fill: String?) -> Int {
        let channels = (fill ?? "").dropFirst(4).dropLast().split(separator: ",").compactMap { Int($0) }
        return channels.count == 3 ? channels.map { abs($0 - 250) }.max()! : 0
    }

    @Test func aSmallChangeIsVisibleNextToALargeOne() {
        // 100,000 counts: `tiny` grew by 20 (+0.02 %), `huge` by 40,000 (+40 %), `same` did not change.
        let lines = ["main;tiny 4980 5000", "main;huge 10000 50000", "main;same 45000 45000"]
        let svg = FlameGraphTests.render(lines)
        #expect(svg.total == 100_000)
        #expect(svg.frame("tiny")?.title == "tiny (5,000 samples, 5.00%; +0.02%)")
        #expect(svg.frame("same")?.fill == "rgb(250,250,250)")
        #expect(Self.distanceFromNeutral(svg.frame("tiny")?.fill) >= 60, "\(svg.frame("tiny")?.fill ?? "")")
        #expect(svg.frame("tiny")?.fill == "rgb(255,158,158)")
        #expect(svg.frame("huge")?.fill == "rgb(255,50,50)")
        // Shrinking is blue, as deep for the same share; --negate swaps.
        let shrunk = FlameGraphTests.render(["main;tiny 5020 5000", "main;rest 95000 95000"])
        #expect(shrunk.frame("tiny")?.fill == "rgb(158,158,255)")
        #expect(FlameGraphTests.render(lines) { $0.negate = true }.frame("tiny")?.fill == "rgb(158,158,255)")
    }

    @Test func shadesDeepenWithTheShareOfTheChange() {
        let total = 1_000_000.0
        let shares = [0.000_001, 0.000_01, 0.000_2, 0.001, 0.01, 0.1, 0.5]
        let greens = shares.map { FrameColors.differential(delta: $0 * total, total: total).g }
        #expect(greens == greens.sorted(by: >))
        #expect(greens.first == 210 && greens.last == 50)
        #expect(FrameColors.differential(delta: 0, total: total) == RGB(r: 250, g: 250, b: 250))
        #expect(FrameColors.differential(delta: 1e-9, total: total).g == 210)  // the lightest tint, never neutral
    }
}
