import CStallCapture
import Foundation
import StallFormat
import StallSamples
import Synchronization
import Testing

@testable import StallProfiler

/// The deep sleep over event loops (WatchdogLoop+DeepTargets.swift, wddeep.c, wdaio.c, wdcpu.c): several loop
/// threads each in `epoll_wait` on a set of their own, each set watched by an AIO poll in a slot of its own and each
/// thread's CPU clock by a timer, all at once. Part of ``WatchdogTests`` (one watchdog at a time: the deep sleep's
/// state is the process's).
extension WatchdogTests {
    /// A stand-in event loop: a thread in `epoll_wait` (no timeout) on a set holding a pipe; woken, it drains the
    /// pipe at once and then blocks for `blockMs` (a handler's blocking read: it runs too little for a CPU timer),
    /// or spins for `spinMs` of its CPU time (a busy handler).
    final class StandInLoop: @unchecked Sendable {
        let set: Epoll
        let pipe: (read: Int32, write: Int32)
        let tid = Atomic<Int32>(0)

        init(blockMs: UInt32, spinMs: Int64 = 0) throws {
            var ends: [Int32] = [-1, -1]
            try #require(Glibc.pipe(&ends) == 0)
            _ = fcntl(ends[0], F_SETFL, O_NONBLOCK)
            set = try #require(Epoll())
            pipe = (ends[0], ends[1])
            try #require(set.add(pipe.read))
            Thread { [self] in
                let me = stallcap_gettid()
                tid.store(me, ordering: .releasing)
                while true {
                    guard !set.wait().isEmpty else { continue }
                    var byte: UInt8 = 0
                    while read(pipe.read, &byte, 1) > 0 {}
                    if byte == 2 { return }  // the end
                    let start = stallcap_thread_cpu_ns(me)
                    while stallcap_thread_cpu_ns(me) - start < spinMs * 1_000_000 {}
                    usleep(blockMs * 1000)
                }
            }.start()
        }

        /// Waits until the thread sits in its `epoll_wait` again; its tid.
        func waitUntilIdle() -> Int32 {
            for _ in 0..<3000 {
                let thread = tid.load(ordering: .acquiring)
                let state = SyscallState(thread: thread)
                if thread != 0, state.kind == .inCall, WatchdogThread.deepSleepCalls.contains(Substring(String(state.number))) {
                    return thread
                }
                usleep(1000)
            }
            return tid.load(ordering: .acquiring)
        }

        func poke(_ byte: UInt8 = 1) {
            var byte = byte
            _ = write(pipe.write, &byte, 1)
        }

        func end() {
            poke(2)
            usleep(20_000)
            close(pipe.write)
            close(pipe.read)
            close(set.fd)
        }
    }

    /// Three loops watched at once: each one's wake, drained at once and followed by a block, wakes the sleep
    /// through its set's AIO poll (3), whichever loop it is, never by the sleep's timeout; a loop that spins wakes
    /// it by its CPU timer or its set.
    @Test func everyWatchedEventLoopsWakeEndsADeepSleep() throws {
        let loops = try (0..<3).map { _ in try StandInLoop(blockMs: 30) }
        let busy = try StandInLoop(blockMs: 0, spinMs: 50)
        defer { (loops + [busy]).forEach { $0.end() } }
        func arm(_ all: [StandInLoop]) throws -> Bool {
            try #require(stallcap_wd_arm_set() == 0)
            var watched = true
            for (index, loop) in all.enumerated() {
                let thread = loop.waitUntilIdle()
                let since = UInt64(max(0, stallcap_thread_cpu_ns(thread)))
                watched = watched && stallcap_wd_watch_target(Int32(index + 1), thread, loop.set.fd, since) == 0
                try #require(stallcap_wd_arm_cpu(thread, SIGPROF, 1) == 0)
            }
            return watched
        }
        var byWatch = 0, other: [Int32] = [], trials = 0
        for round in 0..<4 {
            for poked in loops {
                guard try arm(loops) else {
                    stallcap_wd_disarm_cpu()
                    stallcap_wd_forget()
                    Issue.record("no AIO here: the sets are not watched")
                    return
                }
                // Written from another thread while this one sleeps, as the app's own threads do.
                Thread {
                    usleep(5_000)
                    poked.poke()
                }.start()
                let woken = stallcap_wd_deep_sleep(stallcap_wd_sequence(), 2_000_000_000)
                stallcap_wd_disarm_cpu()
                trials += 1
                if woken == 3 { byWatch += 1 } else { other.append(woken) }
                usleep(40_000)  // the loop's block ends
            }
            _ = round
        }
        // The spinning loop among them: its set or its CPU time ends the sleep, never the timeout.
        _ = try arm(loops + [busy])
        Thread {
            usleep(5_000)
            busy.poke()
        }.start()
        let spun = stallcap_wd_deep_sleep(stallcap_wd_sequence(), 2_000_000_000)
        stallcap_wd_disarm_cpu()
        for slot in 1...4 { stallcap_wd_unwatch_target(Int32(slot)) }
        stallcap_wd_forget()
        #expect(byWatch == trials, "\(byWatch) of \(trials) woken by a loop's set; the others by \(other) (0: the timeout)")
        #expect(spun == 2 || spun == 3, "a busy loop woke the sleep by \(spun) (0: the timeout)")
        var mask = sigset_t()
        pthread_sigmask(SIG_SETMASK, nil, &mask)
        #expect(sigismember(&mask, SIGPROF) == 0, "the capture signal is left blocked")
    }
}

extension WatchdogTests {
    /// An idle loop on a condition variable (no descriptor announces its wake: only a timer on its CPU clock, which a
    /// thread that wakes and blocks at once never trips) beside an idle run loop, under the deep sleep: six blocks
    /// that block at once for 1.5 thresholds are each an episode (a reviewer's probe: with rests of a whole
    /// threshold, 3 of 12 were recorded); a target added after the deep sleep began lets it sleep deeply again (the
    /// add's wake of the sleep was never drained, and every later sleep ended at once); and no ping closure ran with
    /// the capture signal blocked (watchdog-trials futex-loop).
    @Test func aLoopOnAConditionVariableKeepsItsStallsUnderTheDeepSleep() throws {
        let path = TestSupport.temporaryPath("futex-loop.stalls")
        defer { unlink(path) }
        let output = TestSupport.temporaryPath("futex-loop.out"), errors = TestSupport.temporaryPath("futex-loop.err")
        defer {
            unlink(output)
            unlink(errors)
        }
        for file in [output, errors] { _ = FileManager.default.createFile(atPath: file, contents: nil) }
        let process = Process()
        process.executableURL = TestSupport.productsDirectory.appendingPathComponent("watchdog-trials")
        process.arguments = ["futex-loop"]
        process.environment = ProcessInfo.processInfo.environment.merging([EnvironmentName.output: path]) { $1 }
        process.standardOutput = FileHandle(forWritingAtPath: output)
        process.standardError = FileHandle(forWritingAtPath: errors)
        try process.run()
        process.waitUntilExit()
        let printed = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        let said = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
        #expect(process.terminationStatus == 0, "\(said)")
        #expect(printed.contains("deep sleep seen: true") && printed.contains("deep sleep after add: true"), "\(printed)")
        #expect(!said.contains("capture signal blocked"), "\(said)")
        let capture = try CaptureReader.read(path: path)
        let stalls = capture.stalls.filter { $0.target == "loop" }
        #expect(stalls.count == 6 && stalls.allSatisfy { $0.state == .blocked }, "\(stalls.map { ($0.state, $0.durationNs) })")
        #expect(!capture.stalls.contains { $0.target != "loop" }, "\(capture.stalls.map(\.target))")
    }
}
