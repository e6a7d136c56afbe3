import CStallCapture
import Foundation
import StallSamples
import StallFormat
import Synchronization
import Testing

@testable import StallProfiler

/// When the once-per-stall probe is spent: only on a thread found in a system call.
@Suite struct BlockedOnProbeOnceTests {
    /// A busy stall on a loaded machine makes no CPU progress between two samples while it waits for a CPU, so
    /// the watchdog probes it: a thread outside a system call gets no record (the report said "blocked: waiting
    /// for something the watchdog could not identify" for a busy stall), and the stall's probe is not spent,
    /// so a wait that follows in the same stall is still named.
    @Test func aThreadOutsideASystemCallDoesNotSpendTheStallsProbe() throws {
        let tid = ThreadID()
        let phase = Atomic<Int>(0)  // 0 spin, 1 sleep, 2 done
        Thread {
            tid.publish()
            while phase.load(ordering: .acquiring) == 0 { _ = BusyWork.spin(milliseconds: 1) }
            while phase.load(ordering: .acquiring) == 1 { usleep(20_000) }
        }.start()
        while tid.tid == 0 { usleep(1000) }
        defer { phase.store(2, ordering: .releasing) }
        let probe = BlockedOnProbe(configuration: .init(outputPath: "/dev/null"))
        for _ in 0..<20 {
            #expect(probe.probeOnce(stallID: 3, threadID: tid.tid) == nil)
            usleep(2000)
        }
        phase.store(1, ordering: .releasing)
        var record: BlockedOnRecord? = nil
        for _ in 0..<2000 where record == nil {
            usleep(1000)
            record = probe.probeOnce(stallID: 3, threadID: tid.tid)
        }
        let found = try #require(record)
        #expect(found.waitKind == .sleep && found.detail.contains("nanosleep"), "\(found)")
        #expect(probe.probeOnce(stallID: 3, threadID: tid.tid) == nil)
    }
}
