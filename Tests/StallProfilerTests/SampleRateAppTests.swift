import Foundation
import StallAnalysis
import StallFormat
import Testing

@testable import StallProfiler

/// Honest rates on a real app: stall-demo's busy stall sampled with a 1 ms interval. The capture signal reaches a
/// running thread only at a scheduler tick, so the thread cannot get 1,000 samples a second; the end record says
/// what it got. Relations that hold under any load, no timings.
@Suite struct SampleRateAppTests {
    @Test func aBusyStallAskedForOneKilohertzRecordsTheRateItGot() throws {
        let path = TestSupport.temporaryPath("rate-1khz.stalls")
        defer { unlink(path) }
        let result = try TestSupport.run(
            TestSupport.productsDirectory.appendingPathComponent("stall-demo"),
            ["--loop", "runloop", "--stall", "busy", "--stall-ms", "600"],
            environment: [EnvironmentName.output: path, EnvironmentName.threshold: "150", EnvironmentName.interval: "1"])
        #expect(result.status == 0, "\(result.stderr)")
        let capture = try CaptureReader.read(path: path)
        #expect(capture.process?.sampleIntervalNs == 1_000_000)
        let stall = try #require(capture.stalls.first { $0.kind == .stall && $0.isFinished }, "\(capture.stalls.map(\.begin))")
        let end = try #require(stall.end)
        let rate = try #require(end.sampleRate, "the watchdog records the rate in every end record")
        let context = "\(end.sampleCount) samples over \(end.measuredNs) ns, \(rate)"
        // The figure is the end record's own count over its span, and something was sampled.
        #expect(rate.samplesPerKilosecond == EpisodeSampleRate.perKilosecond(count: UInt64(end.sampleCount), overNs: end.measuredNs))
        #expect(rate.samplesPerSecond > 0, "\(context)")
        // Never more than asked: the k-th request is due at least k intervals after the first (slack: the first and
        // the last sample, and the moment between the first request falling due and the first reading).
        #expect(Double(end.sampleCount) <= Double(end.measuredNs) / 1e6 + 2, "\(context)")
        // The signal comes only at a tick, each arrival at a tick of its own: at most one per tick of the span.
        if rate.tickNs > 0 {
            #expect(TickMeter.candidatesNs.contains(UInt64(rate.tickNs)), "\(context)")
            let signalled = stall.samples.filter(\.flags.isSignalled).count
            #expect(Double(signalled) <= Double(end.measuredNs) / Double(rate.tickNs) + 2, "\(signalled) signalled; \(context)")
        }
        // Each sample is asked for half an interval after the one before ended, so that the thread ran in between
        // (before, a sample asked for the moment a late answer was collected repeated its stack as a thread waiting
        // for a CPU: half the samples of this stall).
        let gaps = zip(stall.samples.dropFirst(), stall.samples).map { $0.timestampNs &- $1.timestampNs }
        #expect(gaps.allSatisfy { $0 >= 450_000 && $0 < 1 << 62 }, "\(gaps.sorted().prefix(5)); \(context)")
        if rate.limit == .tick { #expect(rate.tickNs > 1_000_000 && rate.samplesPerSecond < 1000, "\(context)") }
        // Short of half the asked rate, the report says so.
        if rate.samplesPerSecond < 500 && rate.samplesPerSecond >= 10 {
            let text = StallReport(captures: [capture]).text()
            let line = "sampling: asked 1000/s, got \(Int(rate.samplesPerSecond.rounded()))/s"
            #expect(text.contains(line), "\(context)\n\(text)")
        }
    }
}
