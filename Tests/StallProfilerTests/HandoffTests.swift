import CStallCapture
import Foundation
import StallSamples
import Synchronization
import Testing

@testable import StallProfiler

/// The sample hand-off (handoff.c): the watchdog looks for the handler's answer once a tick and gives a request up,
/// cancelled, two ticks after it armed its timer. Part of ``WatchdogTests`` (one sampler at a time in this process).
extension WatchdogTests {
    /// A thread that spins `depth` frames deep with SIGPROF blocked until `release` is set, then spins with it
    /// unblocked until `stop`. With `lateMs`, it unblocks by itself that long after it sees our signal pending. Its
    /// spins lock and unlock an uncontended mutex (no system call): under TSan a signal is delivered only at an
    /// intercepted call.
    final class SignalBlocker: @unchecked Sendable {
        let tid = Atomic<Int32>(0)
        let release = Atomic<Bool>(false)
        let stop = Atomic<Bool>(false)
        /// Set once the thread saw our signal pending, and once it unblocked the signal (delivering it).
        let sawPending = Atomic<Bool>(false), unblocked = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)
        /// The return addresses from the spinning function's caller outwards, as the thread's own walk found them
        /// before it published its tid: every sample of this thread ends with them, and no other thread's does
        /// (threads of another depth).
        private(set) var outer: [UInt] = []
        private let lateMs: UInt64?

        init(lateMs: UInt64?, depth: Int = 1) {
            self.lateMs = lateMs
            Thread { [self] in
                _ = descend(depth)
                done.signal()
            }.start()
            while tid.load(ordering: .acquiring) == 0 { usleep(100) }
        }

        @inline(never) func descend(_ level: Int) -> Int { level <= 1 ? body() : descend(level - 1) &+ 1 }

        @inline(never) func body() -> Int {
            stallcap_warm_thread()
            let walked = UnsafeMutablePointer<UInt>.allocate(capacity: 256)
            defer { walked.deallocate() }
            var flags: UInt32 = 0
            let count = Int(stallcap_unwind_here(walked, 256, &flags, nil))  // [0] here, [1] in body()
            outer = count > 2 ? Array(UnsafeBufferPointer(start: walked + 2, count: count - 2)) : []
            var blocked = sigset_t(), previous = sigset_t()
            sigemptyset(&blocked)
            sigaddset(&blocked, SIGPROF)
            pthread_sigmask(SIG_BLOCK, &blocked, &previous)
            tid.store(stallcap_gettid(), ordering: .releasing)
            var pendingSince: UInt64? = nil
            var mutex = pthread_mutex_t()
            pthread_mutex_init(&mutex, nil)
            defer { pthread_mutex_destroy(&mutex) }
            func touch() {
                pthread_mutex_lock(&mutex)
                pthread_mutex_unlock(&mutex)
            }
            var turns = 0
            while !release.load(ordering: .acquiring) {
                touch()
                if let lateMs {
                    var pending = sigset_t()
                    sigpending(&pending)
                    if pendingSince == nil && sigismember(&pending, SIGPROF) == 1 {
                        pendingSince = stallcap_monotonic_ns()
                        sawPending.store(true, ordering: .releasing)
                    }
                    if let since = pendingSince, stallcap_monotonic_ns() - since > lateMs * 1_000_000 { break }
                }
            }
            pthread_sigmask(SIG_SETMASK, &previous, nil)  // a pending signal is delivered here
            unblocked.store(true, ordering: .releasing)
            while !stop.load(ordering: .acquiring) {
                touch()
                turns &+= 1
            }
            return turns
        }

        func finish() {
            release.store(true, ordering: .releasing)
            stop.store(true, ordering: .releasing)
            done.wait()
        }

        /// True when `frames` (a sample, leaf first) is a stack of this thread.
        func owns(_ frames: ArraySlice<UInt>) -> Bool {
            !outer.isEmpty && frames.suffix(outer.count).elementsEqual(outer)
        }
    }

    static func handoffCounts() -> stallcap_handoff_stats {
        var counts = stallcap_handoff_stats()
        stallcap_handoff_counts(&counts)
        return counts
    }

    /// One `stallcap_sample` of `tid` into `frames`: the status and the frames taken.
    static func sampleOnce(_ tid: Int32, timeoutNs: Int64, _ frames: inout [UInt])
        -> (stallcap_status, ArraySlice<UInt>)
    {
        var info = stallcap_sample_info()
        let status = frames.withUnsafeMutableBufferPointer {
            stallcap_sample(tid, timeoutNs, $0.baseAddress, UInt32($0.count), &info)
        }
        return (status, frames[0..<(status == STALLCAP_OK ? Int(info.frame_count) : 0)])
    }

    @Test func aRequestNobodyAnswersIsAMissedSampleAndTheNextOneIsTaken() throws {
        #expect(stallcap_install(SIGPROF) == 0)
        let thread = SignalBlocker(lateMs: nil)
        defer { thread.finish() }
        // Asked faster than two ticks, the sampler waits for each answer (no pipelined request).
        var configuration = StallWatchdog.Configuration(sampleInterval: .milliseconds(1), outputPath: "/dev/null")
        configuration.sampleTimeout = .milliseconds(50)
        let tid = thread.tid.load(ordering: .acquiring)
        let sampler = EpisodeSampler(
            episodeID: 1, threadID: tid, timing: WatchdogTiming(configuration), maxFrames: configuration.maxFrames)
        let before = Self.handoffCounts()
        #expect(sampler.sample() == nil)
        #expect(sampler.missedCount == 1)
        let after = Self.handoffCounts()
        #expect(after.slept >= before.slept + 1)  // it waited for the tick, then to the deadline
        #expect(after.deadlines >= before.deadlines + 1)
        // Unblocked, the thread answers: the request it left outstanding, or a new one.
        thread.release.store(true, ordering: .releasing)
        var frames = [UInt](repeating: 0, count: 256)
        var info = stallcap_sample_info()
        var status = STALLCAP_TIMEOUT
        for _ in 0..<100 where status != STALLCAP_OK {  // each waits two ticks: a loaded machine may miss some
            status = frames.withUnsafeMutableBufferPointer { stallcap_sample(tid, 5_000_000_000, $0.baseAddress, 256, &info) }
            if status == STALLCAP_BUSY { usleep(1000) }  // a handler preempted in its walk: let it finish
        }
        #expect(status == STALLCAP_OK)
        #expect(info.frame_count > 0)
        #expect(sampler.missedCount == 1)
    }
}

/// A request a handler took but has not finished answering (`STALLCAP_BUSY`: the thread was preempted inside its
/// handler, which a loaded machine does often). Under eight CPU hogs, three such answers in a row once spaced the
/// requests of a 600 ms busy stall out to a second, and it got no sample.
extension WatchdogTests {
    /// Answers of the sampler's requests, chosen by the test: `STALLCAP_BUSY` for the first `busy` requests, then
    /// one sample of three made-up frames.
    final class ScriptedRequests: @unchecked Sendable {
        let busy: Int
        private(set) var count = 0
        init(busy: Int) { self.busy = busy }

        func answer(_ frames: UnsafeMutablePointer<UInt>?, _ info: UnsafeMutablePointer<stallcap_sample_info>?)
            -> stallcap_status
        {
            count += 1
            guard count > busy, let frames, let info else { return STALLCAP_BUSY }
            for i in 0..<3 { frames[i] = UInt(0x1000 * (i + 1)) }
            info.pointee.frame_count = 3
            info.pointee.timestamp_ns = stallcap_monotonic_ns()
            info.pointee.thread_cpu_ns = 1
            return STALLCAP_OK
        }
    }

    /// A sampler of a spinning thread whose requests `requests` answers.
    static func scriptedSampler(_ requests: ScriptedRequests, thread: SignalBlocker) -> EpisodeSampler {
        thread.release.store(true, ordering: .releasing)
        let configuration = StallWatchdog.Configuration(outputPath: "/dev/null")
        let sampler = EpisodeSampler(
            episodeID: 1, threadID: thread.tid.load(ordering: .acquiring), timing: WatchdogTiming(configuration),
            maxFrames: configuration.maxFrames)
        sampler.request = { _, _, frames, _, info in requests.answer(frames, info) }
        return sampler
    }

    @Test func aHandlerPreemptedBeforeItFinishedIsNotARefusal() throws {
        let thread = SignalBlocker(lateMs: nil)
        defer { thread.finish() }
        let requests = ScriptedRequests(busy: 5)
        let sampler = Self.scriptedSampler(requests, thread: thread)
        for _ in 0..<5 { #expect(sampler.sample() == nil) }
        let record = try #require(sampler.sample())
        #expect(record.frames == [0x1000, 0x2000, 0x3000])
        // Every call asked: none was spaced out (a pipelining sampler also sent the next request with the answer).
        #expect(requests.count == (sampler.pipelines ? 7 : 6))
        #expect(sampler.missedCount == 5)
        #expect(sampler.sampleCount == 1)
    }

    @Test func aHandlerUnfinishedWhileTheThreadRanSeveralTicksIsARefusal() throws {
        let thread = SignalBlocker(lateMs: nil)
        defer { thread.finish() }
        let requests = ScriptedRequests(busy: .max)
        let sampler = Self.scriptedSampler(requests, thread: thread)
        let tid = thread.tid.load(ordering: .acquiring)
        for _ in 0..<5 {
            #expect(sampler.sample() == nil)
            // The spinning thread runs 26 ms of CPU, more than the 25 ms after which an unanswered request counts.
            let cpu = stallcap_thread_cpu_ns(tid)
            while stallcap_thread_cpu_ns(tid) - cpu < 26_000_000 { usleep(1000) }
        }
        // Three refusals in a row: the fifth call asks nothing (requests are spaced out to a second).
        #expect(requests.count == 4)
        #expect(sampler.missedCount == 5)
    }
}

/// The signal never reaches a thread inside a system call: it comes from a timer on the thread's CPU clock, which
/// the kernel delivers on the thread's own way back to user code (cputimer.c). Checking /proc first and then
/// sending tgkill left a window: about 1 % of samples cut a sleep short for a thread sleeping every 5 ms.
extension WatchdogTests {
    /// One wait of `kind` for 3 ms: true when it failed with EINTR or returned before its time.
    static func waitWasCutShort(kind: Int) -> Bool {
        let start = stallcap_monotonic_ns()
        var failed = false
        switch kind {
        case 0:
            var request = timespec(tv_sec: 0, tv_nsec: 3_000_000)
            failed = nanosleep(&request, nil) != 0
        case 1: failed = usleep(3000) != 0
        case 2: failed = poll(nil, 0, 3) != 0
        case 3:
            var timeout = timeval(tv_sec: 0, tv_usec: 3000)
            failed = select(0, nil, nil, nil, &timeout) != 0
        default:
            var request = timespec(tv_sec: 0, tv_nsec: 3_000_000)
            failed = clock_nanosleep(CLOCK_MONOTONIC, 0, &request, nil) != 0
        }
        return failed || stallcap_monotonic_ns() - start < 3_000_000
    }

    @Test func aThreadSampledWhileItSleepsEveryFewMillisecondsNeverHasASleepCutShort() throws {
        #expect(stallcap_install(SIGPROF) == 0)
        let tid = Atomic<Int32>(0), stop = Atomic<Bool>(false)
        let cut = Atomic<Int>(0), waits = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        Thread {
            stallcap_warm_thread()
            tid.store(stallcap_gettid(), ordering: .releasing)
            var kind = 0
            while !stop.load(ordering: .acquiring) {
                _ = BusyWork.spin(milliseconds: 2)
                if Self.waitWasCutShort(kind: kind % 5) { cut.add(1, ordering: .relaxed) }
                waits.add(1, ordering: .relaxed)
                kind += 1
            }
            done.signal()
        }.start()
        while tid.load(ordering: .acquiring) == 0 { usleep(100) }
        var frames = [UInt](repeating: 0, count: 256)
        var info = stallcap_sample_info()
        var taken = 0, inCall = 0
        for i in 0..<600 {
            // Armed whatever the thread does (the watchdog would read a sleeping thread's stack from memory): a
            // timer armed during a sleep too can only expire after the sleep, once the thread runs again.
            if SyscallState(thread: tid.load(ordering: .acquiring)).kind == .inCall { inCall += 1 }
            let status = frames.withUnsafeMutableBufferPointer {
                stallcap_sample(tid.load(ordering: .acquiring), 20_000_000, $0.baseAddress, 256, &info)
            }
            if status == STALLCAP_OK { taken += 1 }
            usleep(UInt32(500 + (i * 7919) % 1000))  // at every phase of the thread's work and waits
        }
        stop.store(true, ordering: .releasing)
        done.wait()
        #expect(cut.load(ordering: .relaxed) == 0, "\(cut.load(ordering: .relaxed)) of \(waits.load(ordering: .relaxed)) waits cut short")
        // Both cases ran: requests armed while the thread worked, and while it slept.
        #expect(taken > 0 && inCall > 0, "\(taken) taken, \(inCall) armed in a system call")
    }
}

extension WatchdogTests {
    /// The capture signal's timers listed in /proc/self/timers (a `signal: N/...` line per timer).
    static func captureTimers() -> Int {
        let text = (try? String(contentsOfFile: "/proc/self/timers", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").filter { $0.hasPrefix("signal: \(SIGPROF)/") }.count
    }

    /// After stop() nothing of stallprof's stays armed: a request left outstanding by a timeout could otherwise
    /// fire later, after the app reset the signal to its default (which kills the process).
    @Test func stopDeletesEveryTimerOfTheCaptureSignal() throws {
        _ = try capture(stall: { _ = BusyWork.spin(milliseconds: 400) })
        #expect(Self.captureTimers() == 0, "\(Self.captureTimers()) timers left")
    }
}
