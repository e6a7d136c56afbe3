import CStallCapture
import Foundation
import StallSamples
import Synchronization
import Testing

@testable import StallProfiler

/// A request is waited for two ticks at most (`stallcap_sample`). A request cancelled (its thread asleep in a system
/// call, or a request for another thread made) has its timer disarmed, and a handler that comes later claims
/// nothing. Part of ``WatchdogTests`` (one sampler at a time in this process).
extension WatchdogTests {
    /// No timed assertion: a caller's timeout of a minute would make a wait that ignored the bound fail the test
    /// run's own time limit, not this test.
    static let aMinute: Int64 = 60_000_000_000

    /// Makes SIGPROF pending on thread `tid` as stallprof's own timer sends it (SI_TIMER, the tid as its value),
    /// from a timer of the test's own on CLOCK_MONOTONIC. Stallprof's timer cannot stand in for it: a request is
    /// cancelled by disarming its timer, and a recent kernel (6.18 here) then drops the pending signal instead of
    /// delivering it (older kernels deliver it; a handler preempted before its claim is late the same way). `timer` gets the
    /// timer (the process's first is a nil pointer): delete it after the signal was delivered. False on failure.
    static func lateTimerSignal(to tid: Int32, timer: inout timer_t?) -> Bool {
        var event = sigevent()
        event.sigev_notify = 4  // SIGEV_THREAD_ID
        event.sigev_signo = SIGPROF
        event.sigev_value.sival_int = tid
        event._sigev_un._tid = tid
        guard timer_create(CLOCK_MONOTONIC, &event, &timer) == 0 else { return false }
        var value = itimerspec()
        value.it_value.tv_nsec = 1_000_000
        return timer_settime(timer, 0, &value, nil) == 0
    }

    @Test func aHandlerThatComesAfterItsRequestWasCancelledWritesIntoNoLaterSample() throws {
        #expect(stallcap_install(SIGPROF) == 0)
        // The late thread holds the signal for 30 ms after it arrives: long past its request's two ticks, and past
        // the first request for the other thread, which cancels it. Its handler then runs while the other thread's
        // requests are in flight, and must claim none of them.
        let late = SignalBlocker(lateMs: 30)
        let other = SignalBlocker(lateMs: nil, depth: 3)
        other.release.store(true, ordering: .releasing)
        defer {
            late.finish()
            other.finish()
        }
        let lateTID = late.tid.load(ordering: .acquiring), otherTID = other.tid.load(ordering: .acquiring)
        var timer: timer_t? = nil
        try #require(Self.lateTimerSignal(to: lateTID, timer: &timer))
        defer { timer_delete(timer) }
        while !late.sawPending.load(ordering: .acquiring) { usleep(100) }
        var frames = [UInt](repeating: 0, count: 256)
        let before = Self.handoffCounts()
        // Asked for a minute, the wait still ends at two ticks: a missed sample, not a hang.
        #expect(Self.sampleOnce(lateTID, timeoutNs: Self.aMinute, &frames).0 == STALLCAP_TIMEOUT)
        #expect(Self.handoffCounts().deadlines == before.deadlines + 1)
        var taken = 0, foreign = 0
        // The other thread's samples, until well after the late handler ran.
        for _ in 0..<400 where !late.unblocked.load(ordering: .acquiring) || taken < 20 {
            let (status, stack) = Self.sampleOnce(otherTID, timeoutNs: Self.aMinute, &frames)
            // A handler preempted inside its walk holds its claim (BUSY, at once): give its thread time to finish.
            if status == STALLCAP_BUSY { usleep(1000) }
            guard status == STALLCAP_OK else { continue }
            taken += 1
            if !other.owns(stack) { foreign += 1 }
        }
        let delivered = late.unblocked.load(ordering: .acquiring)
        #expect(delivered)
        // TSan runs a handler late, at the thread's next intercepted call, on its current stack with the context
        // saved when the signal came: walks from that stale context do not find the thread's frames. Under TSan
        // the protocol runs (and is checked for races), but whose frames a sample holds cannot be told.
        let framesTold = dlsym(nil, "__tsan_init") == nil
        #expect(
            taken >= 20 && (foreign == 0 || !framesTold), "\(taken) samples, \(foreign) not the sampled thread's stack")
        // The late thread answers its own requests now, with its own stack.
        var status = STALLCAP_TIMEOUT, stack = ArraySlice<UInt>()
        for _ in 0..<100 where status != STALLCAP_OK {
            (status, stack) = Self.sampleOnce(lateTID, timeoutNs: Self.aMinute, &frames)
            if status == STALLCAP_BUSY { usleep(1000) }
        }
        #expect(status == STALLCAP_OK && ((late.owns(stack) && !other.owns(stack)) || !framesTold))
    }

    @Test func aRequestItsThreadCouldNotAnswerInTimeStaysOutstandingAndItsAnswerIsCollectedLater() throws {
        #expect(stallcap_install(SIGPROF) == 0)
        // The thread holds the signal for 30 ms after it arrives, as a thread preempted at the tick that fired its
        // timer takes it only when it runs again: each wait ends at two ticks, and the request stays armed.
        let late = SignalBlocker(lateMs: 30)
        defer { late.finish() }
        let tid = late.tid.load(ordering: .acquiring)
        var frames = [UInt](repeating: 0, count: 256)
        var waits = 0
        for _ in 0..<200 where !late.sawPending.load(ordering: .acquiring) || waits == 0 {
            #expect(Self.sampleOnce(tid, timeoutNs: Self.aMinute, &frames).0 == STALLCAP_TIMEOUT)
            waits += 1
        }
        while !late.unblocked.load(ordering: .acquiring) { usleep(1000) }
        // Answered meanwhile: collected at once, a sample taken before this call (its handler's time).
        let before = Self.handoffCounts(), start = stallcap_monotonic_ns()
        var info = stallcap_sample_info()
        let status = frames.withUnsafeMutableBufferPointer {
            stallcap_sample(tid, Self.aMinute, $0.baseAddress, UInt32($0.count), &info)
        }
        #expect(status == STALLCAP_OK && info.timestamp_ns < start)
        #expect(Self.handoffCounts().pauses == before.pauses)  // no wait, no new timer: the answer was there
        let framesTold = dlsym(nil, "__tsan_init") == nil  // see above
        #expect(late.owns(frames[0..<Int(info.frame_count)]) || !framesTold)
    }

    @Test func aThreadThatNeverRunsIsAMissedSampleAndItsTimerIsDisarmed() throws {
        #expect(stallcap_install(SIGPROF) == 0)
        // The thread blocks the signal, then sleeps in a semaphore wait until the test posts it: its CPU clock does
        // not move, so a timer on it cannot expire. Woken, it runs 30 ms of CPU, over seven ticks: a timer still
        // armed would expire at the first of them and leave our signal pending.
        let tid = Atomic<Int32>(0), pendingAfter = Atomic<Int>(-1)
        let wake = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        Thread {
            stallcap_warm_thread()
            var blocked = sigset_t(), previous = sigset_t(), pending = sigset_t()
            sigemptyset(&blocked)
            sigaddset(&blocked, SIGPROF)
            pthread_sigmask(SIG_BLOCK, &blocked, &previous)
            tid.store(stallcap_gettid(), ordering: .releasing)
            wake.wait()
            let me = stallcap_gettid(), start = stallcap_thread_cpu_ns(me)
            while stallcap_thread_cpu_ns(me) - start < 30_000_000 { _ = BusyWork.spin(milliseconds: 1) }
            sigpending(&pending)
            pendingAfter.store(Int(sigismember(&pending, SIGPROF)), ordering: .releasing)
            pthread_sigmask(SIG_SETMASK, &previous, nil)
            done.signal()
        }.start()
        while tid.load(ordering: .acquiring) == 0 { usleep(100) }
        // Asleep in its wait (the watchdog would read its stack from memory instead; asked anyway here).
        while SyscallState(thread: tid.load(ordering: .acquiring)).kind != .inCall { usleep(100) }
        var frames = [UInt](repeating: 0, count: 256)
        let before = Self.handoffCounts()
        let (status, _) = Self.sampleOnce(tid.load(ordering: .acquiring), timeoutNs: Self.aMinute, &frames)
        #expect(status == STALLCAP_TIMEOUT)
        #expect(Self.handoffCounts().deadlines == before.deadlines + 1)
        wake.signal()
        done.wait()
        #expect(pendingAfter.load(ordering: .acquiring) == 0, "our signal came after its request was cancelled")
    }
}
