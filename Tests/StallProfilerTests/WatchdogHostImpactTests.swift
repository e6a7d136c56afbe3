import CStallCapture
import Dispatch
import Foundation
import StallFormat
import StallSamples
import Synchronization
import Testing

@testable import StallProfiler

/// The no-EINTR rule for what issue 8 added: presampling (before a stall is declared) and saturated episodes never
/// signal the watched thread while it sleeps in a system call. Part of ``WatchdogTests`` (one watchdog at a time).
extension WatchdogTests {
    /// Sleeps `milliseconds` in one `nanosleep` and says whether it was cut short by a signal (EINTR): the call
    /// SA_RESTART never restarts.
    static func sleepWasInterrupted(milliseconds: Int) -> Bool {
        var request = timespec(tv_sec: 0, tv_nsec: milliseconds * 1_000_000)
        var remaining = timespec()
        return nanosleep(&request, &remaining) != 0 && errno == EINTR
    }

    /// Runs main-queue turns on the stand-in thread under a watchdog: first `saturateMs` of short turns that each
    /// re-enqueue the next (a layout loop across run-loop turns: the thread never sleeps), then `rounds` turns
    /// that each run `work` then sleep `sleepMs`, each enqueued by the previous one. Returns how many sleeps a
    /// signal cut short, and the capture.
    func interruptedSleeps(
        threshold: Duration, saturationPeriod: Duration?, saturateMs: Int = 0,
        rounds: Int, work: @escaping @Sendable () -> Void, sleepMs: Int
    ) throws -> (interrupted: Int, capture: Capture) {
        let path = TestSupport.temporaryPath("host-impact.stalls")
        defer { unlink(path) }
        let queue = Self.standIn
        var configuration = StallWatchdog.Configuration(
            threshold: threshold, sampleInterval: .milliseconds(5), outputPath: path)
        configuration.saturationPeriod = saturationPeriod
        configuration.post = { queue.post($0) }
        let watchdog = try StallWatchdog.start(configuration)
        defer { watchdog.stop() }
        while !watchdog.statistics.mainQueueAnswered { usleep(1000) }
        let interrupted = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        let saturateUntil = stallcap_monotonic_ns() + UInt64(saturateMs) * 1_000_000
        @Sendable func sleepyTurn(_ left: Int) {
            guard left > 0 else {
                done.signal()
                return
            }
            work()
            if Self.sleepWasInterrupted(milliseconds: sleepMs) { interrupted.add(1, ordering: .relaxed) }
            queue.post { sleepyTurn(left - 1) }
        }
        @Sendable func busyTurn() {
            _ = BusyWork.spin(milliseconds: 2)
            queue.post { stallcap_monotonic_ns() < saturateUntil ? busyTurn() : sleepyTurn(rounds) }
        }
        queue.post { busyTurn() }
        done.wait()
        watchdog.stop()
        return (interrupted.load(ordering: .relaxed), try CaptureReader.read(path: path))
    }

    /// Turns that work 60 ms and then sleep 100 ms keep pings waiting past the presampling delay but never reach
    /// the threshold: presampling may sample the work, never the sleep.
    @Test func presamplingNeverCutsASleepShort() throws {
        let result = try interruptedSleeps(
            threshold: .milliseconds(250), saturationPeriod: nil, rounds: 15,
            work: { _ = BusyWork.spin(milliseconds: 60) }, sleepMs: 100)
        #expect(result.interrupted == 0)
        #expect(result.capture.stalls.isEmpty)
    }

    /// A saturated episode ends only some checks after the thread starts sleeping again: its samples in between
    /// never cut a sleep short.
    @Test func aSaturatedEpisodeNeverCutsASleepShort() throws {
        let result = try interruptedSleeps(
            threshold: .milliseconds(400), saturationPeriod: .milliseconds(200), saturateMs: 600, rounds: 30,
            work: { _ = BusyWork.spin(milliseconds: 3) }, sleepMs: 20)
        #expect(result.capture.stalls.contains { $0.kind == .saturated })
        #expect(result.interrupted == 0)
    }
}
