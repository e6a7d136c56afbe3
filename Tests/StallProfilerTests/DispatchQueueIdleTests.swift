import CStallCapture
import Dispatch
import Testing

@testable import StallProfiler

/// The quiet check under dispatchMain() (DispatchQueueIdle.swift): the layout is trusted only after real pings
/// confirmed it, refuted for good by one that did not, and a real ping still goes out every 40 quiet answers.
struct DispatchQueueIdleTests {
    static let mainThread: Int32 = 100
    static let worker: Int32 = 123

    /// A reading of a queue handed to the pool: idle unless the arguments say otherwise.
    static func reading(state: UInt64 = 0x1000_0000_0000, tail: UInt64 = 0, flags: UInt32 = 1)
        -> stallcap_main_queue_reading
    {
        stallcap_main_queue_reading(state: state, tail: tail, flags: flags)
    }

    /// One check (outside #expect, which cannot mutate).
    static func check(_ idle: inout DispatchQueueIdle, _ reading: stallcap_main_queue_reading?) -> Bool {
        idle.answersQuietly(reading)
    }

    static func trusted() -> DispatchQueueIdle {
        var idle = DispatchQueueIdle(layoutKnown: true)
        for _ in 0..<DispatchQueueIdle.confirmationsNeeded {
            idle.answered(by: worker, owner: worker, mainThread: mainThread)
        }
        return idle
    }

    @Test func quietOnlyOnceConfirmedByPings() {
        var idle = DispatchQueueIdle(layoutKnown: true)
        for _ in 1..<DispatchQueueIdle.confirmationsNeeded {
            idle.answered(by: Self.worker, owner: Self.worker, mainThread: Self.mainThread)
            #expect(!Self.check(&idle, Self.reading()))
        }
        // Answers by the process's first thread (a run loop drains the queue) confirm nothing.
        idle.answered(by: Self.mainThread, owner: Self.mainThread, mainThread: Self.mainThread)
        #expect(!Self.check(&idle, Self.reading()))
        idle.answered(by: Self.worker, owner: Self.worker, mainThread: Self.mainThread)
        #expect(Self.check(&idle, Self.reading()))
    }

    @Test func oneAnswerThatFindsAnotherOwnerRefutesTheLayoutForGood() {
        var idle = Self.trusted()
        idle.answered(by: Self.worker, owner: 0, mainThread: Self.mainThread)
        for _ in 0..<10 { idle.answered(by: Self.worker, owner: Self.worker, mainThread: Self.mainThread) }
        #expect(!idle.isTrusted)
        #expect(!Self.check(&idle, Self.reading()))
    }

    @Test func anUnknownLayoutIsNeverUsed() {
        var idle = DispatchQueueIdle(layoutKnown: false)
        for _ in 0..<5 { idle.answered(by: Self.worker, owner: Self.worker, mainThread: Self.mainThread) }
        #expect(!Self.check(&idle, Self.reading()))
        var other = Self.trusted()
        #expect(!Self.check(&other, nil))
    }

    /// Each sign of work makes the check a ping: a drainer, enqueued on the pool, dirty, in a barrier, a queued
    /// block, or the queue still bound to the main thread's run loop.
    @Test(arguments: [
        reading(state: 0x1000_0000_0000 | UInt64(worker)),
        reading(state: 0x1000_0000_0000 | 1 << 31),
        reading(state: 0x1000_0000_0000 | 1 << 39),
        reading(state: 0x1000_0000_0000 | 1 << 54),
        reading(tail: 0x7f00_1234_5678),
        reading(flags: 0x40001),
    ])
    func anyWorkIsAPing(_ busy: stallcap_main_queue_reading) {
        var idle = Self.trusted()
        #expect(!DispatchQueueIdle.isIdle(busy))
        #expect(!Self.check(&idle, busy))
        #expect(Self.check(&idle, Self.reading()))
    }

    @Test func aRealPingEveryFortyQuietAnswers() {
        var idle = Self.trusted()
        var quiet = 0
        while Self.check(&idle, Self.reading()) { quiet += 1 }
        #expect(quiet == DispatchQueueIdle.verifyEvery)
        #expect(!idle.isStill)
        #expect(Self.check(&idle, Self.reading()))
        #expect(!idle.isStill)
        #expect(Self.check(&idle, Self.reading()))
        #expect(idle.isStill)
    }

    /// Rests between checks (WatchdogLoop.restOnQueueWhileIdle) count as quiet answers: the real ping still comes
    /// after verifyEvery of them in all, checks and rests together, also with rests of a whole threshold (weight 2:
    /// while the watch on libdispatch's event set holds), one answer later at most.
    @Test(arguments: [1, 2])
    func restsBetweenChecksCountTowardTheRealPing(weight: Int) {
        var idle = Self.trusted()
        var answers = 0
        while Self.check(&idle, Self.reading()) {
            answers += 1
            guard idle.isStill else { continue }  // no deep sleep, no rest: the watchdog sleeps one interval
            let rests = WatchdogLoop.mostRests(
                quietChecksLeft: idle.quietChecksLeft, thresholdNs: 1, restNs: UInt64(weight))
            idle.restedQuietly(rests * weight - 1)
            answers += rests * weight - 1
        }
        #expect(answers >= DispatchQueueIdle.verifyEvery && answers <= DispatchQueueIdle.verifyEvery + 1)
    }

    /// A look for libdispatch's event set that found none holds 10 s, doubling with each further miss up to 320 s.
    @Test func looksForTheEventSetBackOff() {
        let seconds = (0...8).map { WatchdogLoop.dispatchEventsLookNs(misses: $0) / 1_000_000_000 }
        #expect(seconds == [10, 10, 20, 40, 80, 160, 320, 320, 320])
    }

    /// This toolchain's libdispatch has the layout read in place: a block on the main queue (drained by a pool
    /// worker here, or by the main thread's run loop) finds its own thread in the drain lock, and no block queued.
    @Test func aBlockOnTheMainQueueFindsItselfInTheDrainLock() throws {
        #expect(stallcap_main_queue_layout() == 1)
        let seen = Locked<(thread: Int32, reading: stallcap_main_queue_reading?)?>(nil)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.main.async {
            seen.withLock { $0 = (stallcap_gettid(), DispatchQueueIdle.read()) }
            done.signal()
        }
        try #require(done.wait(timeout: .now() + 30) == .success, "the main queue is not serviced here")
        let (thread, reading) = try #require(seen.withLock { $0 })
        let state = try #require(reading).state
        #expect(Int32(state & DispatchQueueIdle.ownerMask) == thread)
        #expect(state & DispatchQueueIdle.inBarrierBit != 0)
        #expect(!DispatchQueueIdle.isIdle(try #require(reading)))
    }
}
