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
