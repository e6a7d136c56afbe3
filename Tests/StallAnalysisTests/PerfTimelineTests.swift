import Foundation
import Testing
@testable import StallAnalysis

/// perf script text keeps its time in every export but pprof (issue 20): an episode per thread, each sample at its
/// own time, stacks exactly as `fold` prints them; without times it is exported untimed, as before.
@Suite struct PerfTimelineTests {
    static func load(_ path: String, timedPerf: Bool = true, _ configure: (inout FoldOptions) -> Void = { _ in })
        throws -> Timeline
    {
        var options = FoldOptions()
        configure(&options)
        return try Exporter.load([InputSource(path: path)], options: options, timedPerf: timedPerf).0
    }

    @Test func eachThreadIsAnEpisodeWithEverySampleAtItsTime() throws {
        let timeline = try Self.load(FoldFixture.path("perf-script.txt"))
        #expect(timeline.isTimed)
        // The fixture: my app (4242/4243) at 100.000001 and 100.000002 s with 250000 ns cpu-clock periods, java 77
        // at 100.000003 s (100 ns), then cpp 9, short 8 and last 6; instructions (other 5) are filtered out.
        #expect(timeline.episodes.map(\.title) == ["my app (tid 4243)", "java (tid 77)", "cpp (tid 9)", "short (tid 8)",
                                                   "last (tid 6)"])
        let app = timeline.episodes[0]
        #expect(app.pid == 4242 && app.tid == 4243 && app.kind == nil)
        #expect(app.samples.map(\.timestampNs) == [0, 1000], "from the first sample, in nanoseconds")
        #expect(app.samples.map(\.wallNs) == [250_000, 250_000], "a cpu-clock period is the time a sample stands for")
        #expect(app.startNs == 0 && app.durationNs == 251_000)
        let java = timeline.episodes[1]
        #expect(java.pid == 77 && java.tid == 77 && java.samples.map(\.timestampNs) == [2000])
        #expect(timeline.threadName(tid: 4243) == "my app" && timeline.processName(pid: 4242) == "my app")
        // Stacks as fold prints them, the command as the root frame.
        let folded = try Folder.fold([InputSource(path: FoldFixture.path("perf-script.txt"))], options: FoldOptions()).0
        let stacks = Set(timeline.episodes.flatMap { episode in
            episode.samples.map { timeline.frames(of: $0).map(\.name).joined(separator: ";") }
        })
        #expect(stacks == Set(folded.rendered().split(separator: "\n").map { String($0.split(separator: " ").dropLast().joined(separator: " ")) }))
    }

    @Test func sampleWallTimeIsTheGapToTheNextWhenCountsAreNotTime() throws {
        let text = """
            app 10/11 [000] 5.000000: 1000 cycles:u:
            \t1000 work (/app)

            app 10/11 [000] 5.000300: 1000 cycles:u:
            \t1000 work (/app)

            app 10/11 [000] 5.000400: 1000 cycles:u:
            \t1000 work (/app)

            """
        let path = try ExportTools.temporary(Array(text.utf8), suffix: ".perf")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let samples = try Self.load(path).episodes[0].samples
        #expect(samples.map(\.timestampNs) == [0, 300_000, 400_000])
        // The gaps, then the median gap for the last.
        #expect(samples.map(\.wallNs) == [300_000, 100_000, 300_000])
    }

    @Test func perfTextWithoutTimesAndPprofStayUntimed() throws {
        let text = "app 10/11 1000 cycles:u:\n\t1000 work (/app)\n\n"
        let path = try ExportTools.temporary(Array(text.utf8), suffix: ".perf")
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try !Self.load(path).isTimed)
        let pprof = try Self.load(FoldFixture.path("perf-script.txt"), timedPerf: ExportFormat.pprof.timesPerfSamples)
        #expect(!pprof.isTimed && pprof.nanosecondsPerCount == 1, "pprof keeps cpu/nanoseconds counts")
        // Timed perf text among untimed inputs is folded with them.
        let folded = try ExportTools.temporary(Array("main;a 1\n".utf8), suffix: ".folded")
        defer { try? FileManager.default.removeItem(atPath: folded) }
        let mixed = try Exporter.load([InputSource(path: FoldFixture.path("perf-script.txt")), InputSource(path: folded)],
                                      options: FoldOptions()).0
        #expect(!mixed.isTimed && mixed.sampleCount > 5)
    }

    @Test func nameTransformsApplyToTimedStacks() throws {
        let timeline = try Self.load(FoldFixture.path("perf-script.txt")) { $0.transforms.demangleSwift = true }
        let names = timeline.stacks.frames.map(\.name)
        #expect(names.contains("MyApp.worker() -> ()") && !names.contains("$s5MyApp6workeryyF"), "\(names)")
    }

    @Test func perfettoAndChromeTracesPutSamplesOnTheirThreadsAtTheirTimes() throws {
        let timeline = try Self.load(FoldFixture.path("perf-script.txt"))
        var diagnostics = Diagnostics()
        let trace = try PerfettoExportTests.Trace(PerfettoExporter(options: .init()).export(timeline, diagnostics: &diagnostics))
        #expect(trace.samples.map(\.time) == [0, 1000, 2000, 3000, 5000, 6000])
        #expect(trace.samples.map(\.tid) == [4243, 4243, 77, 9, 8, 6] && trace.samples[0].pid == 4242)
        #expect(trace.stack(trace.samples[0].stack).first == "my_app")
        let threads = trace.packets.flatMap { $0.messages(60) }.flatMap { $0.messages(4) }
        #expect(threads.contains { $0.int(2) == 4243 && $0.strings(5) == ["my app"] })
        let chrome = try ChromeTraceExporter(options: .init()).export(timeline, diagnostics: &diagnostics)
        let root = try #require(try JSONSerialization.jsonObject(with: Data(chrome)) as? [String: Any])
        let samples = try #require(root["samples"] as? [[String: Any]])
        #expect(samples.compactMap { ($0["ts"] as? NSNumber)?.doubleValue } == [0, 1, 2, 3, 5, 6], "microseconds")
    }
}
