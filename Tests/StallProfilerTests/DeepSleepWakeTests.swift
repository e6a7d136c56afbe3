import CStallCapture
import Foundation
import Synchronization
import Testing

@testable import StallProfiler

/// The watchdog's deep sleep (wddeep.c) wakes when the main thread leaves its run loop's wait. Part of
/// ``WatchdogTests`` (one watchdog at a time: the deep sleep's state is the process's).
extension WatchdogTests {
    /// The run loop's epoll set becoming ready wakes a deep sleep, unless the main thread drains the set before the
    /// sleeping thread collects that readiness (epoll checks it again then): on a loaded machine the watchdog then
    /// slept a whole threshold into a busy stall, and a 500 ms busy stall at a 250 ms threshold went unrecorded (1
    /// of 15 runs with eight CPU hogs; a C harness whose reader drains at once lost 28 of 50 wakes). The main
    /// thread's CPU time wakes the sleep too. Here a stand-in main thread waits in `ppoll` on an edge-triggered
    /// set, drains it the moment it wakes, then runs: the sleep ends by the set or by the CPU time, never by its
    /// 30 s timeout. The capture signal (SIGPROF) has its default action in this process unless a watchdog ran
    /// before: it is blocked for the sleep and drained, never delivered.
    @Test func aDeepSleepWakesWhenTheMainThreadRunsEvenIfItDrainedTheSet() throws {
        let (epoll, event) = try Self.runLoopLikeSet()
        defer {
            close(epoll)
            close(event)
        }
        let tid = Atomic<Int32>(0)
        let finished = DispatchSemaphore(value: 0)
        let standIn = Thread {
            let me = stallcap_gettid()
            tid.store(me, ordering: .releasing)
            var wait = pollfd(fd: epoll, events: Int16(POLLIN), revents: 0)
            _ = poll(&wait, 1, -1)
            var events = [UInt32](repeating: 0, count: 16)
            _ = Libc.epollWait(epoll, &events, 4, 0)
            var count: UInt64 = 0
            _ = read(event, &count, 8)
            let start = stallcap_thread_cpu_ns(me)
            while stallcap_thread_cpu_ns(me) - start < 200_000_000 {}  // 200 ms of CPU time: a busy stall
            finished.signal()
        }
        standIn.start()
        // Until the stand-in sleeps in its ppoll.
        var thread: Int32 = 0
        for _ in 0..<2000 {
            thread = tid.load(ordering: .acquiring)
            if thread != 0, SyscallState(thread: thread).kind == .inCall { break }
            usleep(1000)
        }
        #expect(SyscallState(thread: thread).kind == .inCall)
        #expect(stallcap_wd_watch(epoll) == 0)
        #expect(stallcap_wd_arm() == 0)
        #expect(stallcap_wd_arm_cpu(thread, SIGPROF, 1) == 0)
        var one: UInt64 = 1
        _ = write(event, &one, 8)
        let woken = stallcap_wd_deep_sleep(stallcap_wd_sequence(), 30_000_000_000)
        stallcap_wd_disarm_cpu()
        stallcap_wd_forget()
        finished.wait()
        #expect(woken == 1 || woken == 2, "woken by \(woken) (0: the timeout)")
        // The signal mask is as before: the capture signal is not left blocked on this thread.
        var mask = sigset_t()
        pthread_sigmask(SIG_SETMASK, nil, &mask)
        #expect(sigismember(&mask, SIGPROF) == 0)
    }

    /// The readiness the epoll watch can lose is not lost to the AIO watch (wdaio.c): a stand-in main thread that
    /// drains the set the moment it wakes and then blocks (a blocked stall: it runs too little for the CPU timer)
    /// wakes every deep sleep through the watch, never by the sleep's timeout. With the epoll watch alone, a C
    /// harness of the same shape missed 16 of 40 and 58 of 100 such wakes.
    @Test func aDeepSleepWakesByTheWatchEvenIfTheMainThreadDrainsTheSetAndBlocks() throws {
        let (epoll, event) = try Self.runLoopLikeSet()
        defer {
            close(epoll)
            close(event)
        }
        let trials = 20
        let tid = Atomic<Int32>(0), done = Atomic<Bool>(false)
        let finished = DispatchSemaphore(value: 0)
        Thread {
            tid.store(stallcap_gettid(), ordering: .releasing)
            while !done.load(ordering: .acquiring) {
                var wait = pollfd(fd: epoll, events: Int16(POLLIN), revents: 0)
                _ = poll(&wait, 1, 200)
                var events = [UInt32](repeating: 0, count: 16)
                _ = Libc.epollWait(epoll, &events, 4, 0)
                var count: UInt64 = 0
                if read(event, &count, 8) == 8 { usleep(30_000) }  // woken: drained at once, then blocked
            }
            finished.signal()
        }.start()
        var byWatch = 0, other: [Int32] = []
        for _ in 0..<trials {
            // Until the stand-in sleeps in its poll again.
            var thread: Int32 = 0
            for _ in 0..<2000 {
                thread = tid.load(ordering: .acquiring)
                let state = SyscallState(thread: thread)
                if thread != 0, state.kind == .inCall, state.number == Self.pollCall { break }
                usleep(1000)
            }
            try #require(stallcap_wd_watch(epoll) == 0)
            try #require(stallcap_wd_arm() == 0)
            try #require(stallcap_wd_arm_cpu(thread, SIGPROF, 1) == 0)
            // Written from another thread while this one sleeps, as the app's own threads do.
            let writer = Thread {
                usleep(5_000)
                var one: UInt64 = 1
                _ = write(event, &one, 8)
            }
            writer.start()
            let woken = stallcap_wd_deep_sleep(stallcap_wd_sequence(), 1_000_000_000)
            stallcap_wd_disarm_cpu()
            if woken == 1 { byWatch += 1 } else { other.append(woken) }
            usleep(40_000)  // the stand-in's block ends
        }
        done.store(true, ordering: .releasing)
        finished.wait()
        stallcap_wd_forget()
        #expect(byWatch == trials, "\(byWatch) of \(trials) woken by the watch; the others by \(other) (0: the timeout)")
    }

    /// A count the AIO watch left in its eventfd (the main thread woke after the last arming on its run loop) wakes
    /// a later sleep at most once, also a sleep on libdispatch's queue, which never drains it: level-triggered, it
    /// woke every sleep at once, and the watchdog spun (found in review: a run loop, then `dispatchMain()`).
    @Test func aCountLeftByTheAIOWatchWakesALaterSleepAtMostOnce() throws {
        let (epoll, event) = try Self.runLoopLikeSet()
        defer {
            close(epoll)
            close(event)
        }
        #expect(stallcap_wd_watch(epoll) == 0)
        #expect(stallcap_wd_arm() == 0)
        try #require(stallcap_wd_watch_holds() == 1, "no AIO poll here: the watch is epoll's alone")
        var one: UInt64 = 1
        _ = write(event, &one, 8)  // the set is ready: the poll completes and counts one
        usleep(10_000)
        var early = 0
        for _ in 0..<3 {  // the sleeps of the queue's path: the set alone, nothing re-armed
            #expect(stallcap_wd_arm_set() == 0)
            if stallcap_wd_deep_sleep(stallcap_wd_sequence(), 50_000_000) != 0 { early += 1 }
        }
        stallcap_wd_forget()
        #expect(early <= 1, "\(early) of 3 sleeps ended at once")
    }

    /// Under dispatchMain() the deep sleep also watches libdispatch's event set (`stallcap_dispatch_event_set`): the
    /// epoll set its manager thread waits in, which holds every dispatch source's descriptor and timer, found by
    /// libdispatch's own wake-up eventfd in it, never an app's set that a thread waits in with an eventfd of its
    /// own. A source becoming ready wakes the sleep through that watch (an AIO poll) with the manager, however
    /// little the block it posts runs (no CPU timer is armed here: only the watch can end the sleep before its
    /// timeout).
    @Test func aDeepSleepWakesWhenADispatchSourceFires() throws {
        let (ownSet, ownEvent) = try Self.runLoopLikeSet(data: 1)
        let released = DispatchSemaphore(value: 0)
        Thread {
            var events = [UInt32](repeating: 0, count: 16)
            _ = Libc.epollWait(ownSet, &events, 4, -1)
            released.signal()
        }.start()
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        let (readEnd, writeEnd) = (ends[0], ends[1])
        let source = DispatchSource.makeReadSource(fileDescriptor: readEnd, queue: .global())
        source.setEventHandler {
            var byte: UInt8 = 0
            _ = read(readEnd, &byte, 1)
        }
        source.resume()
        defer {
            source.cancel()
            var one: UInt64 = 1
            _ = write(ownEvent, &one, 8)
            released.wait()
            close(ownSet)
            close(ownEvent)
            close(writeEnd)
        }
        source.setCancelHandler { close(readEnd) }
        // Until the manager waits in its set again, the source registered.
        var set: Int32 = -1
        for _ in 0..<3000 where set < 0 || !Self.epollSet(set, holds: readEnd) {
            usleep(1000)
            set = stallcap_dispatch_event_set()
        }
        try #require(set >= 0, "libdispatch's event set was not found")
        #expect(set != ownSet)
        #expect(stallcap_is_dispatch_event_set(set) == 1)
        #expect(stallcap_is_dispatch_event_set(ownSet) == 0, "an app's set with an eventfd of data 1 was taken")
        #expect(Self.epollSet(set, holds: readEnd), "the set found does not hold the source's descriptor")
        // Watched by an AIO poll alone (never nested in the sleep's own set, which would change libdispatch's own
        // epoll_ctl): the poll is in flight right after the arming, unless the set was ready just then (other
        // suites' timers and sources in this process): at least one arming in 20 finds it holding.
        // One poll at a time: a run loop's, still in flight, is cancelled by the set's first arming (-2), and a
        // later arming watches the set once it is collected.
        let (runLoopSet, runLoopEvent) = try Self.runLoopLikeSet()
        defer {
            close(runLoopSet)
            close(runLoopEvent)
        }
        #expect(stallcap_wd_watch(runLoopSet) == 0)
        #expect(stallcap_wd_arm() == 0)
        #expect(stallcap_wd_watch_holds() == 1)
        #expect(stallcap_wd_watch_dispatch(set) == -2)
        #expect(stallcap_wd_watch_holds() == 0)
        var held = false
        for _ in 0..<20 where !held {
            held = stallcap_wd_watch_dispatch(set) == 0 && stallcap_wd_dispatch_watch_holds() == 1
            if !held { usleep(10_000) }
        }
        if !held { stallcap_wd_forget() }
        try #require(held, "the poll never held (no AIO here: libdispatch's set is not watched)")
        Thread {
            usleep(50_000)
            var byte: UInt8 = 1
            _ = write(writeEnd, &byte, 1)
        }.start()
        let woken = stallcap_wd_deep_sleep(stallcap_wd_sequence(), 30_000_000_000)
        stallcap_wd_forget()
        #expect(woken == 1, "woken by \(woken) (0: the timeout)")
        #expect(stallcap_wd_dispatch_watch_holds() == 0, "forgotten, the watch still holds")
    }

    /// True when `/proc/self/fdinfo` of epoll set `set` lists descriptor `fd` among its items.
    static func epollSet(_ set: Int32, holds fd: Int32) -> Bool {
        guard let info = try? String(contentsOfFile: "/proc/self/fdinfo/\(set)", encoding: .utf8) else { return false }
        return info.split(separator: "\n").contains { line in
            line.hasPrefix("tfd:") && line.dropFirst(4).split(separator: " ").first == Substring("\(fd)")
        }
    }

    /// An epoll set holding an eventfd, edge-triggered, as CoreFoundation's run loop holds its wake-up descriptors.
    /// `data`: the item's data word (libdispatch registers its own eventfd with data 1).
    static func runLoopLikeSet(data: UInt32 = 0) throws -> (epoll: Int32, event: Int32) {
        let epoll = Libc.epollCreate1(Libc.closeOnExec)
        let event = Libc.eventfd(0, Libc.eventNonBlocking | Libc.closeOnExec)
        // struct epoll_event: the events word, then the 64-bit data (at 4 on x86_64, packed to 12 bytes; at 8 on
        // arm64, 16 bytes).
        var item = [UInt32](repeating: 0, count: 4)
        item[0] = Libc.epollIn | Libc.epollEdgeTriggered
        #if arch(x86_64)
        item[1] = data
        #else
        item[2] = data
        #endif
        try #require(epoll >= 0 && event >= 0 && Libc.epollCtl(epoll, Libc.epollAdd, event, &item) == 0)
        return (epoll, event)
    }

    /// `poll`'s number here (the stand-in's wait).
    static var pollCall: Int32 {
        #if arch(x86_64)
        return 7
        #else
        return 73  // ppoll: aarch64 has no poll
        #endif
    }

    /// Under dispatchMain() the deep sleep watches no run loop: a timer on the whole process's CPU clock wakes it
    /// once any thread used 1 ms more (a busy block on the main queue, whichever worker runs it). Rested on (the
    /// sleep that keeps what is armed), it wakes by that timer, never by its 30 s timeout; with nothing armed a
    /// rest refuses to sleep.
    @Test func aDeepSleepOnTheProcessClockWakesWhenAnyThreadRuns() {
        #expect(stallcap_wd_rest(stallcap_wd_sequence(), 1_000_000) == -1)
        #expect(stallcap_wd_arm_set() == 0)
        #expect(stallcap_wd_arm_cpu(0, SIGPROF, 1_000_000) == 0)
        let finished = DispatchSemaphore(value: 0)
        Thread {
            let me = stallcap_gettid()
            let start = stallcap_thread_cpu_ns(me)
            while stallcap_thread_cpu_ns(me) - start < 200_000_000 {}  // 200 ms of CPU time
            finished.signal()
        }.start()
        let woken = stallcap_wd_rest(stallcap_wd_sequence(), 30_000_000_000)
        stallcap_wd_disarm_cpu()
        stallcap_wd_forget()
        finished.wait()
        #expect(woken == 2, "woken by \(woken) (0: the timeout)")
        var mask = sigset_t()
        pthread_sigmask(SIG_SETMASK, nil, &mask)
        #expect(sigismember(&mask, SIGPROF) == 0)
    }
}

/// The epoll and eventfd calls, which the Glibc module does not import, looked up by name.
private enum Libc {
    static let epollCreate1 = function("epoll_create1", as: (@convention(c) (Int32) -> Int32).self)
    static let epollCtl = function(
        "epoll_ctl", as: (@convention(c) (Int32, Int32, Int32, UnsafeMutableRawPointer?) -> Int32).self)
    static let epollWait = function(
        "epoll_wait", as: (@convention(c) (Int32, UnsafeMutableRawPointer?, Int32, Int32) -> Int32).self)
    static let eventfd = function("eventfd", as: (@convention(c) (UInt32, Int32) -> Int32).self)
    /// EPOLL_CLOEXEC and EFD_CLOEXEC (O_CLOEXEC), EFD_NONBLOCK (O_NONBLOCK), EPOLLIN, EPOLLET, EPOLL_CTL_ADD.
    static let closeOnExec: Int32 = 0o2000000, eventNonBlocking: Int32 = 0o4000
    static let epollIn: UInt32 = 1, epollEdgeTriggered: UInt32 = 1 << 31, epollAdd: Int32 = 1

    static func function<T>(_ name: String, as type: T.Type) -> T { unsafeBitCast(dlsym(nil, name), to: type) }
}
