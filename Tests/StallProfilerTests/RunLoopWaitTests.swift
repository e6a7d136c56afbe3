import Testing

@testable import StallProfiler

/// The quiet check is a pure state machine: these tests feed it made-up system call readings.
@Suite struct RunLoopWaitTests {
    let main: Int32 = 100
    #if arch(x86_64)
    let epollWait: Int32 = 232
    let futex: Int32 = 202
    #else
    let epollWait: Int32 = 22
    let futex: Int32 = 98
    #endif

    /// A reading of a thread inside system call `call` with stack pointer `sp`.
    func inCall(_ call: Int32, sp: UInt64 = 0x7ffd_0000_1000) -> SyscallState {
        SyscallState(parsing: "\(call) 0x3 0x7ffd00000800 0x20 0xffffffffffffffff 0x0 0x8 0x\(String(sp, radix: 16)) 0x7f0000123456")
    }

    /// Sends ping `id` from `reading` at `sentNs`, then has the main thread answer it at `answeredNs` (by default
    /// 1 us later: the ping woke the wait).
    func learn(
        _ wait: inout RunLoopWait, id: UInt64, from reading: SyscallState, sentNs: UInt64 = 0,
        answeredNs: UInt64 = 1000
    ) {
        #expect(!wait.answersQuietly(pingID: id, nowNs: sentNs, thread: main, cpuNs: id * 1000, includesMainQueue: { _ in true }) { reading })
        wait.answered(pingID: id, by: main, atNs: answeredNs)
    }

    /// The place `reading` shows.
    func signature(_ reading: SyscallState) -> RunLoopWait.Signature {
        .init(call: reading.number, stackPointer: reading.stackPointer, programCounter: reading.programCounter)
    }

    /// Answers pings from `reading` promptly until it is trusted.
    func learnUntilTrusted(_ wait: inout RunLoopWait, from reading: SyscallState) {
        for id in UInt64(1001)...UInt64(1000 + RunLoopWait.confirmationsNeeded) { learn(&wait, id: id, from: reading) }
        #expect(wait.trusts(signature(reading)))
    }

    @Test func aRunLoopWaitIsTrustedAfterPromptAnswersAndThenAnswersWithoutAPing() {
        var wait = RunLoopWait(mainThread: main)
        let idle = inCall(epollWait)
        learnUntilTrusted(&wait, from: idle)
        var reads = 0
        #expect(wait.answersQuietly(pingID: 3, nowNs: 0, thread: main, cpuNs: 5000, includesMainQueue: { _ in true }) { reads += 1; return idle })
        #expect(reads == 1)
        // The clock did not move: the thread cannot have left the wait; the file is not read again.
        #expect(wait.answersQuietly(pingID: 4, nowNs: 0, thread: main, cpuNs: 5000, includesMainQueue: { _ in true }) { reads += 1; return idle })
        #expect(reads == 1)
        // It moved: read again; it is back in the same wait.
        #expect(wait.answersQuietly(pingID: 5, nowNs: 0, thread: main, cpuNs: 9000, includesMainQueue: { _ in true }) { reads += 1; return idle })
        #expect(reads == 2)
    }

    @Test func fewerPromptAnswersThanNeededAreNotEnough() {
        var wait = RunLoopWait(mainThread: main)
        for id in UInt64(1)..<UInt64(RunLoopWait.confirmationsNeeded) { learn(&wait, id: id, from: inCall(epollWait)) }
        #expect(!wait.answersQuietly(pingID: 2, nowNs: 0, thread: main, cpuNs: 1, includesMainQueue: { _ in true }) { inCall(epollWait) })
    }

    @Test func aThreadRunningOrWaitingElsewhereIsPinged() {
        var wait = RunLoopWait(mainThread: main)
        let idle = inCall(epollWait)
        learnUntilTrusted(&wait, from: idle)
        #expect(!wait.answersQuietly(pingID: 3, nowNs: 0, thread: main, cpuNs: 10, includesMainQueue: { _ in true }) { SyscallState(parsing: "running") })
        #expect(!wait.answersQuietly(pingID: 4, nowNs: 0, thread: main, cpuNs: 20, includesMainQueue: { _ in true }) { SyscallState(parsing: "-1 0x7ffd00001000 0x7f0000001234") })
        // A lock wait, even at the run loop's stack depth, is not a run loop wait.
        #expect(!wait.answersQuietly(pingID: 5, nowNs: 0, thread: main, cpuNs: 30, includesMainQueue: { _ in true }) { inCall(futex) })
        // A nested wait (deeper stack) is a different place: it must be learned on its own.
        #expect(!wait.answersQuietly(pingID: 6, nowNs: 0, thread: main, cpuNs: 40, includesMainQueue: { _ in true }) { inCall(epollWait, sp: 0x7ffd_0000_0200) })
        #expect(wait.answersQuietly(pingID: 7, nowNs: 0, thread: main, cpuNs: 50, includesMainQueue: { _ in true }) { idle })
    }

    @Test func aWorkerDrainingTheMainQueueIsAlwaysPinged() {
        // dispatchMain(), async @main: the answering thread is a pool worker; an idle worker says nothing about
        // the queue, so its waits are never learned nor trusted, and nothing is read.
        var wait = RunLoopWait(mainThread: main)
        var reads = 0
        for id in UInt64(1)...6 {
            #expect(!wait.answersQuietly(pingID: id, nowNs: 0, thread: 222, cpuNs: 1, includesMainQueue: { _ in true }) { reads += 1; return inCall(epollWait) })
            wait.answered(pingID: id, by: 222, atNs: 1000)
        }
        #expect(reads == 0)
    }

    @Test func answersFromAnotherThreadDoNotConfirm() {
        var wait = RunLoopWait(mainThread: main)
        let idle = inCall(epollWait)
        for id in UInt64(1)...3 {
            #expect(!wait.answersQuietly(pingID: id, nowNs: 0, thread: main, cpuNs: id, includesMainQueue: { _ in true }) { idle })
            wait.answered(pingID: id, by: 222, atNs: 1000)
        }
        #expect(!wait.trusts(.init(call: epollWait, stackPointer: 0x7ffd_0000_1000, programCounter: 0x7f00_0012_3456)))
    }

    @Test func aStallFromAWaitMakesItLearnedAgain() {
        var wait = RunLoopWait(mainThread: main)
        let idle = inCall(epollWait)
        learnUntilTrusted(&wait, from: idle)
        // Every 40th check is a real ping, sent from the trusted wait; it goes unanswered into a stall.
        for id in UInt64(3)..<(3 + UInt64(RunLoopWait.verifyEvery)) {
            #expect(wait.answersQuietly(pingID: id, nowNs: 0, thread: main, cpuNs: 7, includesMainQueue: { _ in true }) { idle })
        }
        #expect(!wait.answersQuietly(pingID: 99, nowNs: 0, thread: main, cpuNs: 7, includesMainQueue: { _ in true }) { idle })
        wait.stallBegan()
        #expect(!wait.answersQuietly(pingID: 100, nowNs: 0, thread: main, cpuNs: 8, includesMainQueue: { _ in true }) { idle })
        wait.answered(pingID: 100, by: main, atNs: 1000)
        for id in UInt64(101)..<UInt64(100 + RunLoopWait.confirmationsNeeded) { learn(&wait, id: id, from: idle) }
        #expect(wait.answersQuietly(pingID: 102, nowNs: 0, thread: main, cpuNs: 9, includesMainQueue: { _ in true }) { idle })
    }

    @Test func aRealPingGoesOutAtLeastEveryFortyQuietAnswers() {
        var wait = RunLoopWait(mainThread: main)
        let idle = inCall(epollWait)
        learnUntilTrusted(&wait, from: idle)
        var sent: [UInt64] = []
        for id in UInt64(3)...200 {
            if !wait.answersQuietly(pingID: id, nowNs: 0, thread: main, cpuNs: 7, includesMainQueue: { _ in true }, read: { idle }) {
                sent.append(id)
                wait.answered(pingID: id, by: main, atNs: 1000)
            }
        }
        #expect(sent.count >= 4 && sent.count <= 6, "\(sent)")
        #expect(zip(sent, sent.dropFirst()).allSatisfy { $1 - $0 == UInt64(RunLoopWait.verifyEvery) + 1 })
    }

    /// The deep sleep's watch woke the watchdog: the main thread left its wait, but it may not have run yet, so its
    /// clock still reads as in the wait. The next check reads the system call state (the kernel says "running" for a
    /// woken thread) and pings; before, it answered quietly by the clock, and the check after it, one interval
    /// later, was the first to see the stall (stall-demo: half of the stalls after an idle time began 62.5 ms late).
    @Test func aWakeByTheWatchMakesTheNextCheckReadTheStateEvenWithTheClockUnmoved() {
        var wait = RunLoopWait(mainThread: main)
        let idle = inCall(epollWait)
        learnUntilTrusted(&wait, from: idle)
        #expect(wait.answersQuietly(pingID: 3, nowNs: 0, thread: main, cpuNs: 7, includesMainQueue: { _ in true }) { idle })
        var reads = 0
        #expect(wait.answersQuietly(pingID: 4, nowNs: 0, thread: main, cpuNs: 7, includesMainQueue: { _ in true }) { reads += 1; return idle })
        #expect(reads == 0 && wait.isStill, "an unmoved clock is enough while nothing woke the watchdog")
        wait.lookAgain()
        #expect(!wait.isStill)
        let woken = SyscallState(parsing: "running")
        #expect(!wait.answersQuietly(pingID: 5, nowNs: 0, thread: main, cpuNs: 7, includesMainQueue: { _ in true }) { reads += 1; return woken })
        #expect(reads == 1)
        // Back in its wait by the next check (a short turn): quiet again, from the state read.
        #expect(wait.answersQuietly(pingID: 6, nowNs: 0, thread: main, cpuNs: 9, includesMainQueue: { _ in true }) { reads += 1; return idle })
        #expect(reads == 2)
    }

    /// The watchdog rests several times between two checks while the main thread's clock stands still
    /// (WatchdogLoop.restWhileStill): each rest counts as a quiet answer, so the real ping still goes out after
    /// ``RunLoopWait/verifyEvery`` rests and checks in all, not after 40 checks of up to four rests each.
    @Test func restsBetweenChecksCountTowardTheRealPing() {
        var wait = RunLoopWait(mainThread: main)
        let idle = inCall(epollWait)
        learnUntilTrusted(&wait, from: idle)
        #expect(wait.quietChecksLeft == 0, "not still yet: no rest may be taken on a wait only just seen")
        var quietSinceReal = 0, real: [Int] = []
        for id in UInt64(3)...120 {
            if wait.answersQuietly(pingID: id, nowNs: 0, thread: main, cpuNs: 7, includesMainQueue: { _ in true }, read: { idle }) {
                quietSinceReal += 1
                // The rest loop's plan (WatchdogLoop.mostRests), rests of one threshold each.
                let extra = WatchdogLoop.mostRests(quietChecksLeft: wait.quietChecksLeft, thresholdNs: 1, restNs: 1) - 1
                wait.restedQuietly(extra)
                quietSinceReal += extra
            } else {
                real.append(quietSinceReal)
                quietSinceReal = 0
                wait.answered(pingID: id, by: main, atNs: 1000)
            }
        }
        // A real ping after exactly verifyEvery quiet answers, rests included.
        #expect(real.count >= 3, "\(real)")
        #expect(real.allSatisfy { $0 == RunLoopWait.verifyEvery }, "\(real)")
    }

    /// Rests of several thresholds (while the AIO watch holds: WatchdogLoop.runLoopRestWhileWatchHolds): the real
    /// ping comes after 40 thresholds rested and checked, or up to a rest's worth less one more when the last rest
    /// had to span its thresholds with fewer answers left.
    @Test(arguments: [2, WatchdogLoop.runLoopRestWhileWatchHolds])
    func restsOfSeveralThresholdsCountThatManyTowardTheRealPing(weight: Int) {
        var wait = RunLoopWait(mainThread: main)
        let idle = inCall(epollWait)
        learnUntilTrusted(&wait, from: idle)
        var thresholdsSinceReal = 0, real: [Int] = []
        for id in UInt64(3)...400 {
            if wait.answersQuietly(pingID: id, nowNs: 0, thread: main, cpuNs: 7, includesMainQueue: { _ in true }, read: { idle }) {
                thresholdsSinceReal += 1  // the check's own
                guard wait.isStill else { continue }  // not still yet: a normal interval, no rest
                let rests = WatchdogLoop.mostRests(
                    quietChecksLeft: wait.quietChecksLeft, thresholdNs: 1, restNs: UInt64(weight))
                #expect(rests >= 1 && rests <= WatchdogLoop.restsPerStep)
                wait.restedQuietly(rests * weight - 1)
                thresholdsSinceReal += rests * weight - 1
            } else {
                real.append(thresholdsSinceReal)
                thresholdsSinceReal = 0
                wait.answered(pingID: id, by: main, atNs: 1000)
            }
        }
        #expect(real.count >= 3, "\(real)")
        #expect(real.allSatisfy { $0 >= RunLoopWait.verifyEvery && $0 < RunLoopWait.verifyEvery + weight }, "\(real)")
    }

    /// The app's own `poll(fd, 50 ms)` on the main thread, then a turn of the run loop: every ping gets through
    /// within 50 ms, but only when the call ends on its own. Such a wait is never trusted (the same call blocking
    /// for seconds is a stall); before, two late answers made it trusted and a 2 s poll went unreported.
    @Test func aWaitThatLetsPingsThroughOnlyLateIsNeverTrusted() {
        var wait = RunLoopWait(mainThread: main)
        let ownPoll = inCall(7, sp: 0x7ffd_0000_3000)
        for id in UInt64(1)...20 {
            let sent = id * 62_500_000
            learn(&wait, id: id, from: ownPoll, sentNs: sent, answeredNs: sent + 3_000_000 + (id % 5) * 10_000_000)
            #expect(!wait.trusts(signature(ownPoll)), "trusted after ping \(id)")
        }
        // Prompt answers by chance must come in a row: one late answer in between starts the count again.
        for id in UInt64(21)...40 {
            let sent = id * 62_500_000
            let late: UInt64 = id % UInt64(RunLoopWait.confirmationsNeeded) == 0 ? 30_000_000 : 500_000
            learn(&wait, id: id, from: ownPoll, sentNs: sent, answeredNs: sent + late)
            #expect(!wait.trusts(signature(ownPoll)), "trusted after ping \(id)")
        }
    }

    @Test func aTrustedWaitWhoseRealPingIsAnsweredLateMustBeLearnedAgain() {
        var wait = RunLoopWait(mainThread: main)
        let idle = inCall(epollWait)
        learnUntilTrusted(&wait, from: idle)
        for id in UInt64(1)...UInt64(RunLoopWait.verifyEvery) {
            #expect(wait.answersQuietly(pingID: id, nowNs: 0, thread: main, cpuNs: 7, includesMainQueue: { _ in true }) { idle })
        }
        #expect(!wait.answersQuietly(pingID: 99, nowNs: 5_000_000_000, thread: main, cpuNs: 7, includesMainQueue: { _ in true }) { idle })
        wait.answered(pingID: 99, by: main, atNs: 5_000_000_000 + 100_000_000)
        #expect(!wait.trusts(signature(idle)))
        #expect(!wait.answersQuietly(pingID: 100, nowNs: 6_000_000_000, thread: main, cpuNs: 8, includesMainQueue: { _ in true }) { idle })
    }

    @Test func aWaitWithoutTheMainQueuesDescriptorIsNeverLearned() {
        var wait = RunLoopWait(mainThread: main)
        let ownPoll = inCall(epollWait)
        var asked = 0
        for id in UInt64(1)...8 {
            let quiet = wait.answersQuietly(
                pingID: id, nowNs: id * 1_000_000, thread: main, cpuNs: id,
                includesMainQueue: { _ in asked += 1; return false }, read: { ownPoll })
            #expect(!quiet)
            wait.answered(pingID: id, by: main, atNs: id * 1_000_000 + 1000)  // prompt, yet never a confirmation
        }
        #expect(asked == 1, "the descriptors are looked at once per place")
        #expect(!wait.trusts(.init(call: epollWait, stackPointer: 0x7ffd_0000_1000, programCounter: 0x7f00_0012_3456)))
    }

    /// A target's thread (an event loop's): its wait is learned only from pings whose post readied it
    /// (`postStirred`: a handler's own wait lets pings through promptly when it ends on its own, and was learned
    /// so); answered promptly but not readied by the post, or not measured, it is never trusted, and readied it is.
    /// Once trusted, a real ping measured not readied suspects the wait; one not measured (the watchdog preempted
    /// around the post) leaves it trusted.
    @Test func aTargetsWaitIsLearnedOnlyFromPingsWhosePostReadiedIt() {
        let handlerPoll = inCall(epollWait)
        for readied in [false, true, nil] as [Bool?] {
            var wait = RunLoopWait(mainThread: main, waitCalls: RunLoopWait.targetWaitCalls)
            for id in UInt64(1)...8 {
                #expect(!wait.answersQuietly(
                    pingID: id, nowNs: id * 1_000_000, thread: main, cpuNs: id, includesMainQueue: { _ in true },
                    read: { handlerPoll }) || readied == true)
                if wait.candidateWait != nil { wait.postStirred(readied) }
                wait.answered(pingID: id, by: main, atNs: id * 1_000_000 + 1000)
            }
            #expect(wait.trusts(signature(handlerPoll)) == (readied == true), "readied by the post: \(String(describing: readied))")
        }
        for verified in [false, nil] as [Bool?] {
            var wait = RunLoopWait(mainThread: main, waitCalls: RunLoopWait.targetWaitCalls)
            var id: UInt64 = 0
            while !wait.trusts(signature(handlerPoll)) {
                id += 1
                _ = wait.answersQuietly(
                    pingID: id, nowNs: id, thread: main, cpuNs: id, includesMainQueue: { _ in true }, read: { handlerPoll })
                wait.postStirred(true)
                wait.answered(pingID: id, by: main, atNs: id + 1000)
            }
            // Quiet answers until a real ping is due, then that ping, answered promptly.
            var quiet = 0
            while wait.answersQuietly(
                pingID: 100 + UInt64(quiet), nowNs: 0, thread: main, cpuNs: 5000, includesMainQueue: { _ in true },
                read: { handlerPoll })
            {
                quiet += 1
            }
            #expect(quiet == QuietAnswers.verifyEvery)
            wait.postStirred(verified)
            wait.answered(pingID: 100 + UInt64(quiet), by: main, atNs: 1000)
            #expect(wait.trusts(signature(handlerPoll)) == (verified == nil), "verified: \(String(describing: verified))")
        }
    }
}
