import CStallCapture
import Dispatch
import Foundation
import StallFormat
import StallSamples
import Synchronization
import Testing

@testable import StallProfiler

/// `stop()` in the middle of an episode closes it. Part of ``WatchdogTests`` (one watchdog at a time).
extension WatchdogTests {
    /// Starts a watchdog on the stand-in thread, runs `episode` there until released, calls `stop()` once
    /// `started` says the episode is under way, then releases it. Returns the capture.
    func stopDuring(
        saturationPeriod: Duration?, started: @escaping (StallWatchdog) -> Bool,
        episode: @escaping @Sendable (_ released: @escaping @Sendable () -> Bool) -> Void
    ) throws -> Capture {
        let path = TestSupport.temporaryPath("stop-during.stalls")
        defer { unlink(path) }
        var configuration = StallWatchdog.Configuration(
            threshold: .milliseconds(100), sampleInterval: .milliseconds(5), outputPath: path)
        configuration.saturationPeriod = saturationPeriod
        let queue = Self.standIn
        configuration.post = { queue.post($0) }
        let watchdog = try StallWatchdog.start(configuration)
        while !watchdog.statistics.mainQueueAnswered { usleep(1000) }
        let release = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)
        queue.post {
            episode { release.load(ordering: .acquiring) }
            done.signal()
        }
        // Generous: an episode that never starts fails the expectations below, it does not hang the test.
        for _ in 0..<1000 where !started(watchdog) { usleep(10_000) }
        watchdog.stop()
        release.store(true, ordering: .releasing)
        done.wait()
        return try CaptureReader.read(path: path)
    }

    @Test func stopDuringAStallClosesIt() throws {
        let capture = try stopDuring(
            saturationPeriod: nil, started: { $0.statistics.stalls > 0 && $0.statistics.samples >= 3 },
            episode: { released in while !released() { _ = BusyWork.spin(milliseconds: 20) } })
        #expect(capture.closedCleanly)
        let stall = try #require(capture.stalls.first)
        #expect(capture.stalls.count == 1)
        #expect(stall.isFinished)
        #expect(stall.state == .busy)
        #expect((stall.end?.sampleCount ?? 0) >= 3)
        #expect(stall.end?.endNs ?? 0 <= capture.closedAtNs ?? 0)
    }

    @Test func stopDuringASaturatedEpisodeClosesIt() throws {
        // Short turns, each enqueueing the next: pings are answered, the thread never sleeps.
        let capture = try stopDuring(
            saturationPeriod: .milliseconds(200), started: { $0.statistics.saturatedEpisodes > 0 },
            episode: { released in
                @Sendable func turn() {
                    guard !released() else { return }
                    _ = BusyWork.spin(milliseconds: 5)
                    Self.standIn.post(turn)
                }
                turn()
            })
        #expect(capture.closedCleanly)
        let episode = try #require(capture.stalls.first { $0.kind == .saturated })
        #expect(episode.isFinished)
    }
}

/// The begin record of a stall reaches the file when the stall is declared, before any sample is taken.
@Suite struct StallBeginFlushTests {
    @Test func theBeginRecordAndPresamplesAreOnDiskBeforeTheFirstSample() throws {
        let path = TestSupport.temporaryPath("begin-flush.stalls")
        defer { unlink(path) }
        let configuration = StallWatchdog.Configuration(
            threshold: .milliseconds(100), sampleInterval: .milliseconds(5), outputPath: path)
        let writer = try CaptureWriter(path: path)
        let loop = WatchdogLoop(configuration: configuration, writer: writer, shared: WatchdogShared())
        let now = stallcap_monotonic_ns()
        let presamples = Presamples(
            sampler: EpisodeSampler(
                episodeID: 0, threadID: stallcap_gettid(), timing: loop.timing, maxFrames: configuration.maxFrames,
                presampling: true),
            capacity: 8)
        presamples.keep(SampleRecord(stallID: 0, timestampNs: now - 2_000_000, threadCPUNs: 1, flags: [], frames: [1, 2]))
        presamples.keep(SampleRecord(stallID: 0, timestampNs: now - 1_000_000, threadCPUNs: 2, flags: [], frames: [1, 2]))
        loop.episode = .presampling(presamples)
        // The loop is not started: nothing else flushes. The stall is declared; its first sample is not taken.
        loop.perform(.beginStall(stallID: 1, startNs: now - 100_000_000, threadID: stallcap_gettid()), loop.main)
        let capture = try CaptureReader.read(path: path)
        let stall = try #require(capture.stalls.first)
        #expect(!stall.isFinished)
        #expect(stall.samples.count == 2)
        #expect(writer.pendingByteCount == 0)
    }
}
