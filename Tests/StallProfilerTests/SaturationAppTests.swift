import Foundation
import StallAnalysis
import StallFormat
import Testing

/// Saturated episodes and presampling, on the sample apps run as separate processes with the watchdog on.
@Suite struct SaturationAppTests {
    func run(_ name: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Capture {
        let path = TestSupport.temporaryPath("\(name).stalls")
        defer { unlink(path) }
        let result = try TestSupport.run(
            TestSupport.productsDirectory.appendingPathComponent(name), arguments,
            environment: [EnvironmentName.output: path].merging(environment) { $1 })
        #expect(result.status == 0, "\(name): \(result.stderr)")
        return try CaptureReader.read(path: path)
    }

    @Test(arguments: ["runloop", "dispatch"])
    func aLayoutLoopAcrossRunLoopTurnsIsASaturatedEpisodeSampledInThePass(loop: String) throws {
        let capture = try run("cell-height", ["--seconds", "3", "--loop", loop])
        #expect(capture.closedCleanly)
        let saturated = capture.stalls.filter { $0.kind == .saturated }
        let episode = try #require(saturated.first)
        #expect(capture.stalls.allSatisfy { $0.kind == .saturated }, "the main queue kept answering: no stall")
        // RunLoop.main drains the main queue on the first thread; dispatchMain() on a worker.
        #expect((episode.begin.threadID == capture.process?.pid) == (loop == "runloop"))
        #expect(episode.begin.detectedNs - episode.begin.startNs >= 900_000_000, "sustained for the period")
        #expect(episode.isFinished, "stop() closes the episode")
        #expect(episode.state == .busy)
        #expect(episode.samples.count >= 20)
        let stacks = TestSupport.stacks(of: Capture(source: capture.source, process: capture.process, images: capture.images, stalls: [episode]))
        #expect(stacks.contains { stack in stack.contains { $0.contains("HostingView.layoutPass") } })
        // The report names the pass the run loop keeps re-entering, not the closure that carries it.
        let report = StallReport(captures: [capture])
        let hints = report.episodes.first { $0.kind == .saturated }?.profile.hints.map(\.text) ?? []
        #expect(hints.contains { $0.hasPrefix("loop across run-loop turns") && $0.contains("HostingView.layoutPass") },
                "\(hints)")
    }

    @Test func aStallDuringASaturatedEpisodeEndsItAndTheyShareOneNumbering() throws {
        let capture = try run("cell-height", ["--seconds", "5", "--stall-at", "2.5"])
        #expect(capture.closedCleanly)
        #expect(capture.stalls.map(\.id) == Array(1...UInt32(capture.stalls.count)))
        let stall = try #require(capture.stalls.first { $0.kind == .stall })
        let before = try #require(capture.stalls.first { $0.kind == .saturated })
        #expect(before.id < stall.id)
        let end = try #require(before.end)
        #expect(end.endNs <= stall.begin.detectedNs + 50_000_000, "ended when the stall was declared")
        #expect(stall.state == .busy)
        let stacks = TestSupport.stacks(of: Capture(source: "", images: capture.images, stalls: [stall]))
        #expect(stacks.contains { stack in stack.contains { $0.contains("HostingView.slowPass") } })
    }

    @Test func aLayoutThatSettlesIsNeverSaturated() throws {
        let capture = try run("cell-height", ["--seconds", "2"], environment: [EnvironmentName.disable: "self-sizing"])
        #expect(capture.closedCleanly)
        #expect(capture.stalls.isEmpty)
    }

    @Test func aHealthyAnimationIsNeverSaturated() throws {
        // 60 % work in every 10 ms frame: busy, but the run loop sleeps between frames.
        let capture = try run("cell-height", ["--seconds", "3", "--animate", "60"], environment: [EnvironmentName.disable: "self-sizing"])
        #expect(capture.closedCleanly)
        #expect(!capture.stalls.contains { $0.kind == .saturated })
    }

    @Test func saturationCanBeTurnedOff() throws {
        let capture = try run("cell-height", ["--seconds", "2"], environment: [EnvironmentName.saturation: "0"])
        #expect(capture.closedCleanly)
        #expect(!capture.stalls.contains { $0.kind == .saturated })
    }

    @Test func aOneSecondBusyStallIsSampledFromItsStart() throws {
        let capture = try run("stall-demo", ["--stall", "busy", "--stall-ms", "1000"])
        let stall = try #require(capture.stalls.first { $0.kind == .stall })
        #expect(stall.state == .busy)
        // Sampled from its start to its end, without a hole: presamples begin half a ping period (31 ms) after
        // the unanswered ping, the stall's start, and precede detection; then a sample at least every 150 ms
        // (the 10 ms interval, or on a loaded machine the wait for a CPU and a tick: the signal comes from a timer
        // on the thread's CPU clock), to the end. Idle, ~95 samples; seen 53 in a loaded CI run. Before
        // presampling a 1 s stall had ~74, none before detection. The signal comes only while the thread runs, so
        // the count asked is 40 or one per 25 ms of the CPU the thread got, whichever is less (under eight CPU
        // hogs it got about a fifth of a CPU: 11 and 34 samples, each a true one).
        let cpuMs = Int((stall.end?.cpuNs ?? 0) / 1_000_000)
        #expect(stall.samples.count >= min(40, cpuMs / 25), "\(stall.samples.count) samples in \(cpuMs) ms of CPU")
        let first = try #require(stall.samples.first)
        #expect(first.timestampNs < stall.begin.detectedNs)
        #expect(first.timestampNs >= stall.begin.startNs)
        #expect(first.timestampNs - stall.begin.startNs < 150_000_000)
        let times = stall.samples.map(\.timestampNs)
        let gaps = zip(times, times.dropFirst()).map { $1 &- $0 }
        #expect((gaps.max() ?? 0) < 150_000_000, "longest gap \((gaps.max() ?? 0) / 1_000_000) ms")
        #expect(stall.endNs - (times.last ?? 0) < 150_000_000)
        #expect((stall.activeRatio ?? 0) <= 1)
        // Each sample's run-queue wait matches its time and CPU clock: between two samples, CPU + wait cannot
        // be many times the wall time (before the fix, up to 500x under load). Generous margin for noise.
        let real = stall.samples.filter { !$0.flags.contains(.repeated) }
        for (a, b) in zip(real, real.dropFirst()) where b.timestampNs > a.timestampNs {
            let active = Double((b.threadCPUNs &- a.threadCPUNs) &+ (b.runQueueNs &- a.runQueueNs))
            #expect(active / Double(b.timestampNs - a.timestampNs) < 3)
        }
    }
}
