import CStallCapture

/// The other targets in the deep sleep (WatchdogLoop+DeepSleep.swift): an idle server's event loops sleep in their
/// waits as the main thread does in its run loop, and checking each every interval cost the watchdog 16 wakes a
/// second for the first and a clock read per check for each (1.5 ms/s, then 0.12 ms/s per loop). So the deep sleep
/// covers them too, on the same terms as the main thread: every executor target's thread sat still in its trusted
/// wait at its last quiet check (``WatchedTarget/stillTick``) and has not run since. The sleep then arms, beside the
/// main queue's, a timer on each target thread's CPU clock (one more nanosecond of it: the first scheduler tick
/// that finds it running wakes the watchdog) and, when the thread waits in one epoll set without a timeout (an
/// event loop's `epoll_wait`), an AIO poll of that set (`stallcap_wd_watch_target`): the event that wakes the loop
/// wakes the watchdog in the same instant, even when the loop runs too little for a tick (a handler that blocks at
/// once). A target's rest lasts three thresholds while its set's poll holds (as the run loop's), else one check
/// interval (a loop with only a CPU timer: a condition variable's futex, a poll of several descriptors), and each rest
/// counts as quiet checks of it (its real ping still goes out after ``QuietAnswers/verifyEvery``); any wake
/// checks every target at once. A serial queue or the cooperative pool has no thread of its own to watch and its
/// checks are pings: with one watched the watchdog checks every interval.
extension WatchdogLoop {
    /// True when the deep sleep may cover every other target (true with none): each is an executor with a thread
    /// of its own, idle, whose last quiet check found that thread still in its trusted wait, its CPU clock where
    /// that check read it.
    func othersMayRest() -> Bool {
        // At most 64 (the AIO slots; the CPU timers are 72 with the main thread's or the process's).
        others.count <= 64 && others.allSatisfy { target in
            guard target.pool == nil, target.hasOwnThread, target.detector.isIdle, target.episode.isIdle,
                let tick = target.stillTick
            else { return false }
            return stallcap_thread_cpu_ns(tick.thread) == Int64(tick.ns)
        }
    }

    /// Arms the deep sleep for every other target, once the main queue's arming proved the sleep's set ours: a
    /// timer on each loop thread's CPU clock (one per thread: `timedThread`, the main thread's, has its own
    /// already), and an AIO poll of its epoll set when it waits in one alone. False when a timer could not be armed
    /// (the caller releases what was armed).
    func armOthers(timedThread: Int32?) -> Bool {
        // One timer per thread: an executor on the main thread, or two targets on one thread, share it.
        var timed: Set<Int32> = timedThread.map { [$0] } ?? []
        for target in others {
            guard let tick = target.stillTick else { return false }
            let fd = target.loopWait?.trustedWait.map { wait in
                withUnsafePointer(to: wait.raw) { stallcap_wait_single_epoll($0) }
            } ?? -1
            let watched = target.watchSlot > 0 && fd >= 0
                && stallcap_wd_watch_target(target.watchSlot, tick.thread, fd, tick.ns) == 0
            target.watchedSet = watched ? fd : -1
            if timed.insert(tick.thread).inserted {
                guard stallcap_wd_arm_cpu(tick.thread, configuration.signal, 1) == 0 else { return false }
            }
            target.armedTick = tick
        }
        return true
    }

    /// True while no armed target's thread ran since the arming (its CPU clock where the arming read it).
    func othersStill() -> Bool {
        others.allSatisfy { target in
            target.armedTick.map { stallcap_thread_cpu_ns($0.thread) == Int64($0.ns) } ?? true
        }
    }

    /// How long one rest may last for the other targets: for a loop, three thresholds while the AIO poll of its set
    /// holds (its wake then wakes the watchdog at once: the timeout backstops only what the poll cannot see); else,
    /// one check interval (a quarter threshold), as without the deep sleep: what wakes it
    /// then (a CPU timer) misses a thread that wakes and blocks at once, whose stall would be seen a whole rest
    /// late, and one shorter than twice its threshold not at all (a reviewer's test: 3 of 12 stalls of 350 ms
    /// recorded at a 250 ms threshold with rests of one threshold). Nil with no other targets.
    func othersRestNs() -> UInt64? {
        others.map { target in
            let holds = target.watchedSet >= 0 && target.armedTick.map {
                stallcap_wd_target_watch_holds(target.watchSlot, $0.thread, target.watchedSet, $0.ns) == 1
            } == true
            return holds
                ? target.detector.thresholdNs * UInt64(Self.runLoopRestWhileWatchHolds) : target.detector.pingPeriodNs
        }.min()
    }

    /// How long the first sleep after an arming may last for the other targets: a loop's threshold while its set is
    /// watched, else one check interval (``othersRestNs()``); nil with no other targets.
    func othersFirstSleepNs() -> UInt64? {
        others.map { $0.watchedSet >= 0 ? $0.detector.thresholdNs : $0.detector.pingPeriodNs }.min()
    }

    /// The most rests of `restNs` the other targets allow after a check: for each, no more than its quiet answers
    /// left cover (``mostRests(quietChecksLeft:thresholdNs:restNs:)``).
    func othersMostRests(restNs: UInt64) -> Int {
        others.map { target in
            let left = target.loopWait?.quietChecksLeft ?? 0
            return Self.mostRests(quietChecksLeft: left, thresholdNs: Self.checkUnitNs(target), restNs: restNs)
        }.min() ?? Self.restsPerStep
    }

    /// How much of a rest counts as one quiet check of `target`: a threshold for a loop whose set is watched (as for
    /// the main thread resting on its run loop), a check interval otherwise (it rests no longer).
    static func checkUnitNs(_ target: WatchedTarget) -> UInt64 {
        target.watchedSet >= 0 ? target.detector.thresholdNs : target.detector.pingPeriodNs
    }

    /// `rests` rests of `restNs` ended with every target still: each unit of them past the first
    /// (``checkUnitNs(_:)``) counts as a quiet check of that target.
    func othersRested(_ rests: Int, restNs: UInt64) {
        for target in others {
            let checks = Int(UInt64(rests) * restNs / max(1, Self.checkUnitNs(target)))
            target.loopWait?.restedQuietly(checks - 1)
        }
    }

    /// A deep sleep ended early: every other target is checked at once. With `setReady` (a watched set woke it),
    /// from its thread's system call state, whatever its clock says (the loop's thread may not have run yet).
    func othersStirred(setReady: Bool) {
        for target in others {
            if setReady { target.loopWait?.lookAgain() }
            target.detector.checkNow()
        }
    }

    /// Forgets what the deep sleep armed for the other targets (WatchdogLoop's releaseDeepSleep disarmed the timers;
    /// a set's poll stays in flight for the next arming, or until its target goes).
    func releaseOthers() {
        for target in others {
            target.armedTick = nil
            target.watchedSet = -1
        }
    }

    /// The lowest watch slot (1-64) no other target holds; 0 when all are taken (that target's set is not watched).
    func freeWatchSlot() -> Int32 {
        let taken = Set(others.map(\.watchSlot))
        return (1...64).first { !taken.contains($0) } ?? 0
    }

    /// How many rests of `restNs` may follow a check of a target whose threshold is `thresholdNs`, with
    /// `quietChecksLeft` quiet answers still allowed before its real ping: at least one, at most ``restsPerStep``,
    /// and no more than those answers cover (the first rest's first threshold is the check's own).
    static func mostRests(quietChecksLeft: Int, thresholdNs: UInt64, restNs: UInt64) -> Int {
        max(1, min(restsPerStep, Int(UInt64(quietChecksLeft + 1) * thresholdNs / max(1, restNs))))
    }

    /// Before the targets are stepped: when one loop (or the main thread in its run loop) is due a real ping to
    /// verify its quiet answers, every other past half of its quiet answers is verified along with it
    /// (``RunLoopWait/verifyAlong()``), so that their pings go out at one wake, and the deep sleep resumes after one
    /// round instead of once per target.
    func alignVerifications() {
        guard runLoopWait.verificationDue || others.contains(where: { $0.loopWait?.verificationDue == true }) else {
            return
        }
        runLoopWait.verifyAlong()
        for target in others { target.loopWait?.verifyAlong() }
    }
}
