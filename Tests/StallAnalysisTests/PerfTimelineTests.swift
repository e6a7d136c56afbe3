import Foundation
import Testing
@testable import StallAnalysis
import StallFormat

/// perf script text keeps its time and addresses in every export (issue 20): an episode per thread, each sample at
/// its own time, stacks exactly as `fold` prints them, frames with perf's address and module; without times it is
/// exported untimed, as before.
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
        #expect(timeline.threadName(pid: 4242, tid: 4243) == "my app" && timeline.processName(pid: 4242) == "my app")
        // Stacks as fold prints them, the command as the root frame.
        let folded = try Folder.fold([InputSource(path: FoldFixture.path("perf-script.txt"))], options: FoldOptions()).0
        let stacks = Set(timeline.episodes.flatMap { episode in
            episode.samples.map { timeline.frames(of: $0).map(\.name).joined(separator: ";") }
        })
        #expect(stacks == Set(folded.rendered().split(separator: "\n").map { String($0.split(separator: " ").dropLast().joined(separator: " ")) }))
    }

    /// One perf sample of `comm` on pid/tid at `time` (seconds text), weighing `period` events of `event`.
    static func event(_ comm: String, _ ids: String, _ time: String, _ frame: String = "leaf",
                      period: Int = 1000, event: String = "cycles:u") -> String {
        "\(comm) \(ids) [000] \(time): \(period) \(event):\n\t 400000 \(frame) (/opt/a)\n\n"
    }

    static func timeline(_ text: String, _ configure: (inout FoldOptions) -> Void = { _ in }) throws -> (Timeline, Diagnostics) {
        let path = try ExportTools.temporary(Array(text.utf8), suffix: ".perf")
        defer { try? FileManager.default.removeItem(atPath: path) }
        var options = FoldOptions()
        configure(&options)
        return try Exporter.load([InputSource(path: path)], options: options)
    }

    @Test func threadsAreTheirProcessTidAndCommandAndTheirSamplesInTimeOrder() throws {
        let text = Self.event("app", "10/11", "100.000002", "second") + Self.event("app", "10/11", "100.000001", "first")
            + Self.event("other", "20/11", "100.000003") + Self.event("ls", "10/11", "100.000004")
        let (timeline, _) = try Self.timeline(text)
        // A tid reused by another process, and a thread that exec'd, are threads of their own.
        #expect(timeline.episodes.map(\.title) == ["app (tid 11)", "other (tid 11)", "ls (tid 11)"])
        #expect(timeline.episodes.map(\.pid) == [10, 20, 10])
        let app = timeline.episodes[0]
        #expect(app.samples.map(\.timestampNs) == [0, 1000], "sorted, from the earliest sample")
        #expect(app.samples.map { timeline.frames(of: $0).last?.name } == ["first", "second"])
        #expect(timeline.processName(pid: 20) == "other" && timeline.threadName(pid: 20, tid: 11) == "other")
    }

    @Test func aSampleWithoutAUsableTimeMakesTheFileUntimedWithAWarningNamingItsLine() throws {
        let text = Self.event("app", "10/11", "100.000001") + "app 10/11 [000] 1000 cycles:u:\n\t 400000 leaf (/opt/a)\n\n"
        let (timeline, diagnostics) = try Self.timeline(text)
        #expect(!timeline.isTimed)
        #expect(diagnostics.warnings.contains { $0.contains(": line 4: a sample without a usable time") }, "\(diagnostics.warnings)")
        let (huge, hugeDiagnostics) = try Self.timeline(Self.event("app", "10/11", "18446744074.0"))
        #expect(!huge.isTimed && hugeDiagnostics.warnings.contains { $0.contains("line 1:") })
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
        // The gaps, at most the recording's median gap (300 us here), which the last one gets.
        #expect(samples.map(\.wallNs) == [300_000, 100_000, 300_000])
        // A thread sampled rarely ran rarely: its gap is capped at the median of the busy thread's gaps.
        let busy = (0..<9).map { Self.event("busy", "1/1", String(format: "5.%06d", $0 * 100)) }.joined()
        let sparse = Self.event("sparse", "2/2", "5.000000") + Self.event("sparse", "2/2", "9.000000")
        let walls = try Self.timeline(busy + sparse).0.episodes.first { $0.title == "sparse (tid 2)" }?.samples.map(\.wallNs)
        #expect(walls == [100_000, 100_000])
    }

    @Test func perfTextWithoutTimesStaysUntimed() throws {
        let text = "app 10/11 1000 cycles:u:\n\t1000 work (/app)\n\n"
        let path = try ExportTools.temporary(Array(text.utf8), suffix: ".perf")
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try !Self.load(path).isTimed)
        #expect(try !Self.load(FoldFixture.path("perf-script.txt"), timedPerf: false).isTimed)
        // Timed perf text among untimed inputs is folded with them.
        let folded = try ExportTools.temporary(Array("main;a 1\n".utf8), suffix: ".folded")
        defer { try? FileManager.default.removeItem(atPath: folded) }
        let mixed = try Exporter.load([InputSource(path: FoldFixture.path("perf-script.txt")), InputSource(path: folded)],
                                      options: FoldOptions()).0
        #expect(!mixed.isTimed && mixed.sampleCount > 5)
    }

    @Test func framesKeepPerfsAddressAndModuleAndCountsTheirPeriod() throws {
        let timeline = try Self.load(FoldFixture.path("perf-script.txt"))
        let app = timeline.episodes[0]
        #expect(app.samples.map(\.count) == [250_000, 250_000] && timeline.nanosecondsPerCount == 1)
        let frames = timeline.frames(of: app.samples[0])
        #expect(frames.first?.name == "my_app" && frames.first?.address == nil, "the command has no place")
        let main = try #require(frames.first { $0.name == "main" })
        #expect(main.image == "/opt/app/MyApp" && main.address == 0x5555_0000_c000)
        // One image per module over the addresses seen in it, the first sample's program first.
        let image = try #require(timeline.images.first)
        #expect(image.path == "/opt/app/MyApp" && image.start == 0x5555_0000_b000 && image.end == 0x5555_0000_c001)
        // --merge-recursion merges frames: names only, never a frame at another frame's address.
        let merged = try Self.load(FoldFixture.path("perf-script.txt")) { $0.transforms.mergeRecursion = true }
        #expect(merged.stacks.frames.allSatisfy { $0.address == nil } && merged.images.isEmpty)
    }

    @Test func pprofOfPerfTextHasMappingsAddressesAndCpuNanoseconds() throws {
        let timeline = try Self.load(FoldFixture.path("perf-script.txt"))
        let profile = try #require(ProtoMessage(try PprofExportTests.profile(timeline)))
        let strings = profile.strings(6)
        #expect(profile.messages(1).map { strings[Int($0.int(1))] } == ["cpu"], "cpu/nanoseconds alone, no wall")
        let values = profile.messages(2).flatMap { $0.integers(2) }
        #expect(values.reduce(0, +) == 500_138, "the periods, as fold counts them")
        let mappings = profile.messages(3)
        #expect(strings[Int(mappings.first?.int(5) ?? 0)] == "/opt/app/MyApp")
        let addresses = Set(profile.messages(4).map { $0.int(3) })
        #expect(addresses.contains(0x5555_0000_c000) && addresses.contains(0xffff_ffff_8100_0000))
    }

    @Test func demangledStacksReadAsFoldReadsThemForwardersIncluded() throws {
        // A closure called through its partial apply forwarder: the forwarder keeps its name beside its closure.
        let text = "app 10/11 [000] 5.000000: 1000 cycles:u:\n"
            + "\t 1000 $s6ChatUI6WindowC10layoutPassyyFyycfU_ (/opt/a)\n"
            + "\t 2000 $s6ChatUI6WindowC10layoutPassyyFyycfU_TA (/opt/a)\n\t 3000 main (/opt/a)\n\n"
        let (timeline, _) = try Self.timeline(text) { $0.transforms.demangleSwift = true }
        let path = try ExportTools.temporary(Array(text.utf8), suffix: ".perf")
        defer { try? FileManager.default.removeItem(atPath: path) }
        var options = FoldOptions()
        options.transforms.demangleSwift = true
        let folded = try Folder.fold([InputSource(path: path)], options: options).0.rendered()
        let stack = timeline.frames(of: timeline.episodes[0].samples[0]).map(\.name).joined(separator: ";")
        #expect(folded == stack + " 1000\n")
        #expect(stack.contains("partial apply forwarder for closure #1"), "\(stack)")
        // A capture and perf text count different things: not one export.
        let capture = try ReportFixtures.write(ReportFixtures.mixedRecords(), name: "perf-and-capture")
        defer { try? FileManager.default.removeItem(atPath: capture) }
        #expect {
            try Exporter.load([InputSource(path: capture), InputSource(path: path)], options: FoldOptions())
        } throws: { error in
            guard case StallError.usage(let message) = error else { return false }
            return message.contains("count different things")
        }
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
        // A thread's extent is a slice in category profile, with no stall number.
        let begins = trace.packets.flatMap { $0.messages(11) }.filter { $0.int(9) == 1 }
        #expect(begins.count == 5 && begins.allSatisfy { $0.strings(22) == ["profile"] })
        #expect(begins.allSatisfy { !$0.messages(4).contains { $0.strings(10) == ["stall"] } })
        let chrome = try ChromeTraceExporter(options: .init()).export(timeline, diagnostics: &diagnostics)
        let root = try #require(try JSONSerialization.jsonObject(with: Data(chrome)) as? [String: Any])
        let samples = try #require(root["samples"] as? [[String: Any]])
        #expect(samples.compactMap { ($0["ts"] as? NSNumber)?.doubleValue } == [0, 1, 2, 3, 5, 6], "microseconds")
    }
}
