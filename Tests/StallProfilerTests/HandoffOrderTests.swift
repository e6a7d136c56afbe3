import CStallCapture
import Foundation
import StallFormat
import Synchronization
import Testing

@testable import StallProfiler

/// A request left outstanding (its thread did not answer within two ticks) may be answered just before the thread
/// goes to sleep in a system call. The sampler then reads the sleeping thread's stack from memory; that answer is
/// older than the memory sample and must not be collected after it as the thread's current stack. Part of
/// ``WatchdogTests`` (one sampler at a time in this process).
extension WatchdogTests {
    /// A thread that spins with SIGPROF blocked until the signal is pending and `release` is set, then unblocks it
    /// (its handler answers there), sleeps on `wake`, and spins with the signal unblocked until `stop`.
    final class AnswerThenSleep: @unchecked Sendable {
        let tid = Atomic<Int32>(0)
        /// Set once the thread saw our signal pending, and once it unblocked it; `stop` ends its last spin.
        let sawPending = Atomic<Bool>(false), release = Atomic<Bool>(false), unblocked = Atomic<Bool>(false)
        let stop = Atomic<Bool>(false)
        let wake = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)

        init() {
            Thread { [self] in
                stallcap_warm_thread()
                var blocked = sigset_t(), previous = sigset_t(), pending = sigset_t()
                sigemptyset(&blocked)
                sigaddset(&blocked, SIGPROF)
                pthread_sigmask(SIG_BLOCK, &blocked, &previous)
                tid.store(stallcap_gettid(), ordering: .releasing)
                var mutex = pthread_mutex_t()
                pthread_mutex_init(&mutex, nil)
                defer { pthread_mutex_destroy(&mutex) }
                func touch() {  // no system call; an intercepted call under TSan, which delivers signals there
                    pthread_mutex_lock(&mutex)
                    pthread_mutex_unlock(&mutex)
                }
                while !(release.load(ordering: .acquiring) && sawPending.load(ordering: .acquiring))
                    && !stop.load(ordering: .acquiring)
                {
                    touch()
                    sigpending(&pending)
                    if sigismember(&pending, SIGPROF) == 1 { sawPending.store(true, ordering: .releasing) }
                }
                pthread_sigmask(SIG_SETMASK, &previous, nil)  // the handler answers the outstanding request here
                unblocked.store(true, ordering: .releasing)
                wake.wait()
                while !stop.load(ordering: .acquiring) { touch() }
                done.signal()
            }.start()
            while tid.load(ordering: .acquiring) == 0 { usleep(100) }
        }

        func finish() {
            stop.store(true, ordering: .releasing)
            wake.signal()
            done.wait()
        }
    }

    /// A sampler of `thread` (the capture handler installed) asking `interval` apart.
    static func sampler(of thread: AnswerThenSleep, interval: Duration) -> EpisodeSampler {
        #expect(stallcap_install(SIGPROF) == 0)
        let configuration = StallWatchdog.Configuration(sampleInterval: interval, outputPath: "/dev/null")
        return EpisodeSampler(
            episodeID: 1, threadID: thread.tid.load(ordering: .acquiring), timing: WatchdogTiming(configuration),
            maxFrames: configuration.maxFrames)
    }

    @Test func anAnswerOlderThanAStackReadFromMemoryIsNotCollectedAfterIt() throws {
        let thread = AnswerThenSleep()
        defer { thread.finish() }
        let tid = thread.tid.load(ordering: .acquiring)
        // Asked faster than two ticks, the sampler waits for each answer (a pipelined one: the next test).
        let sampler = Self.sampler(of: thread, interval: .milliseconds(1))
        // The thread blocks the signal: the request is not answered and stays outstanding (it runs, so it is not
        // cancelled as a sleeping thread's would be).
        #expect(sampler.sample() == nil)
        while !thread.sawPending.load(ordering: .acquiring) { usleep(100) }
        thread.release.store(true, ordering: .releasing)
        // It takes the signal (its handler answers the outstanding request), then sleeps in a semaphore wait.
        while !thread.unblocked.load(ordering: .acquiring) { usleep(100) }
        while SyscallState(thread: tid).kind != .inCall { usleep(100) }
        let fromMemory = try #require(sampler.sample())
        #expect(fromMemory.flags.contains(.fromStackMemory))
        // Woken, it runs: the next signalled sample is taken after the stack read from memory, not the answer it
        // gave before it slept.
        thread.wake.signal()
        let cpu = stallcap_thread_cpu_ns(tid)
        while stallcap_thread_cpu_ns(tid) - cpu < 2_000_000 { usleep(500) }
        var signalled: SampleRecord? = nil
        for _ in 0..<200 where signalled == nil {
            if let record = sampler.sample(), record.flags.isSignalled { signalled = record }
        }
        let record = try #require(signalled)
        #expect(
            record.timestampNs >= fromMemory.timestampNs,
            "a sample stamped \(fromMemory.timestampNs - min(fromMemory.timestampNs, record.timestampNs)) ns before the stack read from memory came after it")
    }
}

extension WatchdogTests {
    /// Pipelined, the answer the thread gave before it slept is collected first, as the sample of its time; the
    /// request sent with it, unanswered while the thread sleeps, is cancelled and the stack read from memory.
    @Test func aPipelinedAnswerGivenBeforeASleepIsCollectedBeforeTheStackReadFromMemory() throws {
        let thread = AnswerThenSleep()
        defer { thread.finish() }
        let tid = thread.tid.load(ordering: .acquiring)
        let sampler = Self.sampler(of: thread, interval: .milliseconds(50))
        try #require(sampler.pipelines)
        #expect(sampler.sample() == nil)  // sent; the thread blocks the signal
        while !thread.sawPending.load(ordering: .acquiring) { usleep(100) }
        thread.release.store(true, ordering: .releasing)
        while !thread.unblocked.load(ordering: .acquiring) { usleep(100) }
        while SyscallState(thread: tid).kind != .inCall { usleep(100) }
        let answered = try #require(sampler.sample())
        #expect(answered.flags.isSignalled)
        #expect(sampler.outstanding != nil)  // the next request went out with the answer
        let fromMemory = try #require(sampler.sample())
        #expect(fromMemory.flags.contains(.fromStackMemory))
        #expect(fromMemory.timestampNs >= answered.timestampNs)
        #expect(sampler.outstanding == nil)  // cancelled
        #expect(sampler.missedCount == 0)
    }
}

/// A thread that exits with a request outstanding: the request can never be answered (its timer watched the old
/// thread), so the next call says the thread is gone and the slot is free for the next thread's requests.
extension WatchdogTests {
    @Test func aThreadThatExitsWithARequestOutstandingIsGoneAndTheNextThreadIsSampled() throws {
        #expect(stallcap_install(SIGPROF) == 0)
        let leaving = SignalBlocker(lateMs: nil)
        let other = SignalBlocker(lateMs: nil, depth: 3)
        other.release.store(true, ordering: .releasing)
        defer { other.finish() }
        let leavingTID = leaving.tid.load(ordering: .acquiring)
        var frames = [UInt](repeating: 0, count: 256)
        // It blocks the signal: unanswered, the request stays outstanding while the thread runs.
        #expect(Self.sampleOnce(leavingTID, timeoutNs: Self.aMinute, &frames).0 == STALLCAP_TIMEOUT)
        leaving.finish()  // it unblocks the signal (its handler may answer), then exits
        while stallcap_thread_cpu_ns(leavingTID) >= 0 { usleep(1000) }
        let (status, _) = Self.sampleOnce(leavingTID, timeoutNs: Self.aMinute, &frames)
        // Gone; or answered while it unblocked before it exited (its own stack, collected now).
        #expect(status == STALLCAP_NO_THREAD || status == STALLCAP_OK)
        #expect(Self.sampleOnce(leavingTID, timeoutNs: Self.aMinute, &frames).0 == STALLCAP_NO_THREAD)
        var taken = STALLCAP_TIMEOUT, stack = ArraySlice<UInt>()
        for _ in 0..<100 where taken != STALLCAP_OK {
            (taken, stack) = Self.sampleOnce(other.tid.load(ordering: .acquiring), timeoutNs: Self.aMinute, &frames)
            if taken == STALLCAP_BUSY { usleep(1000) }
        }
        let framesTold = dlsym(nil, "__tsan_init") == nil  // see HandoffBoundTests
        #expect(taken == STALLCAP_OK && (other.owns(stack) || !framesTold))
    }
}
