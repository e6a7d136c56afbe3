import Foundation
import StallFormat
import Testing

/// `watchdog-trials main-sync`: under dispatchMain(), a thread of the app's own runs a busy block through
/// `DispatchQueue.main.sync`, which libdispatch runs on that thread. The watchdog samples the thread in the main
/// queue's drain lock (DispatchQueueIdle), not the pool worker that answered the last ping: before, the stall was
/// sampled on an idle worker and read as blocked, with the worker's parking stack.
@Suite struct MainSyncAppTests {
    @Test func theThreadInsideMainSyncIsTheOneSampled() throws {
        let result = try TestSupport.runCapturing("watchdog-trials", ["main-sync"])
        #expect(result.status == 0, "\(result.stderr)")
        let line = try #require(result.stderr.split(separator: "\n").first { $0.hasPrefix("sync caller: ") })
        let caller = try #require(Int32(line.dropFirst("sync caller: ".count)), "\(line)")
        let capture = result.capture
        #expect(capture.closedCleanly)
        let stall = try #require(capture.stalls.first { $0.kind == .stall }, "\(capture.stalls.map(\.begin))")
        #expect(stall.begin.threadID == caller, "sampled \(stall.begin.threadID), the caller is \(caller)")
        #expect(stall.state == .busy)
        let stacks = TestSupport.stacks(of: capture)
        #expect(stacks.contains { $0.contains { $0.contains("BusyWork") } }, "\(stacks.prefix(3))")
    }
}

/// `watchdog-trials other-queue-busy`: under dispatchMain(), the worker that last answered a ping spins 3 s for
/// other queues while the main queue reads idle. With checks answered by the queue's reading, that worker stayed
/// the watched thread and was reported as a saturated main queue (4 of 4 runs); a queue read idle has no thread.
@Suite struct OtherQueueBusyAppTests {
    @Test func anIdleMainQueueIsNotSaturatedByItsLastWorkersOtherWork() throws {
        let result = try TestSupport.runCapturing("watchdog-trials", ["other-queue-busy"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.capture.closedCleanly)
        #expect(result.capture.stalls.isEmpty, "\(result.capture.stalls.map { ($0.kind, $0.begin.threadID) })")
    }
}
