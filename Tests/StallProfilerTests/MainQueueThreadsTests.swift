import CStallCapture
import Foundation
import Synchronization
import Testing

@testable import StallProfiler

/// Picking the thread that runs the stalled work when several threads have answered pings (`dispatchMain()`).
@Suite struct MainQueueThreadsTests {
    /// Starts a thread that sleeps (or spins) until released; returns its tid.
    final class Worker: Sendable {
        let tid = Atomic<Int32>(0)
        let release = Atomic<Bool>(false)

        init(spinning: Bool) {
            let thread = Thread { [self] in
                tid.store(stallcap_gettid(), ordering: .releasing)
                while !release.load(ordering: .relaxed) {
                    if !spinning { usleep(2_000) }
                }
            }
            thread.start()
            while tid.load(ordering: .acquiring) == 0 { usleep(100) }
        }

        var id: Int32 { tid.load(ordering: .acquiring) }
    }

    @Test func aSingleAnswererIsAlwaysChosen() {
        var threads = MainQueueThreads()
        threads.answered(by: 1234, cpuNs: 0)
        #expect(threads.threadToSample(latest: 1234) == 1234)
    }

    @Test func theThreadDoingTheWorkWinsOverTheLatestIdleAnswerer() {
        let busy = Worker(spinning: true), idle = Worker(spinning: false)
        defer {
            busy.release.store(true, ordering: .relaxed)
            idle.release.store(true, ordering: .relaxed)
        }
        var threads = MainQueueThreads()
        threads.answered(by: busy.id, cpuNs: UInt64(stallcap_thread_cpu_ns(busy.id)))
        threads.answered(by: idle.id, cpuNs: UInt64(stallcap_thread_cpu_ns(idle.id)))
        // Let the busy thread use a few milliseconds of CPU beyond its answer.
        while stallcap_thread_cpu_ns(busy.id) < 0 || threads.threadToSample(latest: idle.id) != busy.id {
            usleep(5_000)
            if stallcap_thread_cpu_ns(busy.id) > 5_000_000_000 { break }
        }
        #expect(threads.threadToSample(latest: idle.id) == busy.id)
    }

    @Test func exitedThreadsAreSkipped() {
        let idle = Worker(spinning: false)
        defer { idle.release.store(true, ordering: .relaxed) }
        var threads = MainQueueThreads()
        threads.answered(by: idle.id, cpuNs: 0)
        threads.answered(by: 0x3fff_fff0, cpuNs: 0)  // no such thread
        #expect(threads.threadToSample(latest: 0x3fff_fff0) == idle.id)
        #expect(MainQueueThreads.isRunnable(0x3fff_fff0) == false)
    }
}
