import CStallCapture
#if canImport(Glibc)
import Glibc
#endif

/// What a deep sleep left armed.
enum DeepArming {
    /// A watch on the run loop's epoll set and a timer on the main thread's CPU clock, armed when that clock read
    /// `ns`: valid while it still does.
    case runLoop(thread: Int32, ns: UInt64)
    /// A timer on the process's CPU clock, for a deep sleep on libdispatch's main queue, and with `watched` a watch
    /// on libdispatch's event set: valid while neither fired (each check reads the queue anyway).
    case queue(watched: Bool)
}

/// The deep sleep (wddeep.c): instead of waking every check interval while nothing goes on, the watchdog sleeps
/// until the thread servicing the main queue stirs, or for longer than an interval.
extension WatchdogLoop {
    /// How much CPU the rest of the process may use before it wakes a deep sleep under `dispatchMain()`, and the
    /// most it may have used since the check before for one to begin: 1 ms.
    static let processQuietNs: UInt64 = 1_000_000

    /// Sleeps deeply when nothing goes on and this step's check was quiet since the check before; false when it did
    /// not sleep (the caller sleeps as usual). The main thread's run loop (``sleepOnRunLoop(sequence:tick:)``) or
    /// libdispatch's main queue under `dispatchMain()` (``sleepOnQueue(sequence:)``).
    func sleepDeeply(sequence: UInt32) -> Bool {
        // Other targets sleep deeply only as event loops still in their waits (WatchdogLoop+DeepTargets.swift).
        guard detector.isIdle, episode.isIdle, let thread = detector.mainQueueThread, othersMayRest() else {
            releaseDeepSleep()
            return false
        }
        // Under dispatchMain() the last server may be gone (idle workers exit): the queue is read all the same.
        let onRunLoop = thread == runLoopWait.mainThread
        if case .queue = deepArmed, onRunLoop { releaseDeepSleep() }
        if case .runLoop = deepArmed, !onRunLoop { releaseDeepSleep() }
        guard onRunLoop else { return sleepOnQueue(sequence: sequence) }
        guard let tick = main.tickCPU else {
            releaseDeepSleep()
            return false
        }
        return sleepOnRunLoop(sequence: sequence, tick: tick)
    }

    /// Sleeps until the main thread leaves its run loop's wait, or for a threshold, instead of one check interval,
    /// when nothing is going on: the main thread slept in its trusted wait since the check before, no ping is
    /// outstanding and no episode is sampled (deep sleep, wddeep.c). False when it did not sleep: the caller sleeps
    /// as usual.
    ///
    /// The wait must be on the run loop's epoll set alone, without a timeout: then the main thread leaves it only
    /// when that set becomes ready (or a signal interrupts it), and the same readiness wakes the watchdog, unless
    /// the main thread drains the set first (a loaded machine: wddeep.c). So the main thread's CPU clock wakes it
    /// too: a timer that expires at the first scheduler tick that finds the main thread running. Both are armed
    /// before the main thread's CPU clock is read again: a thread that left the wait before the arming has a moved
    /// clock, and one that leaves it after makes the armed set ready or runs into the timer.
    ///
    /// A thread that wakes and at once blocks elsewhere (a blocked stall) may run too little for the timer, and its
    /// wake can still be lost: its stall is then seen up to a threshold late.
    ///
    /// A deep sleep that nothing ended leaves everything armed (the signal blocked, the timer and the one-shot watch
    /// pending), and while the main thread's clock stays where it was armed the next one rests on it
    /// (`stallcap_wd_rest`: three system calls where arming takes about fifteen); the loop releases it
    /// (``releaseDeepSleep()``) as soon as the clock moved, and before posting anything.
    func sleepOnRunLoop(sequence: UInt32, tick: (thread: Int32, ns: UInt64)) -> Bool {
        guard stillThisStep, let wait = runLoopWait.trustedWait else {
            releaseDeepSleep()
            return false
        }
        if case .runLoop(let thread, let ns) = deepArmed {
            guard (thread, ns) == tick, othersStill() else {
                releaseDeepSleep()
                return false
            }
            let woken = restWhileStill(sequence: sequence, tick: tick)
            reportLostDescriptors()
            if woken != 0 { stirred(by: woken) }
            return woken >= 0
        }
        let fd = withUnsafePointer(to: wait.raw) { stallcap_wait_single_epoll($0) }
        // The set's readiness alone can be lost (the main thread drains it before this thread collects it: wddeep.c),
        // so the main thread's CPU time wakes the sleep too; without that wake there is no deep sleep.
        let armed = fd >= 0 && stallcap_wd_watch(fd) == 0 && stallcap_wd_arm() == 0
            && stallcap_wd_arm_cpu(tick.thread, configuration.signal, 1) == 0
        reportLostDescriptors()
        guard armed else { return false }
        deepArmed = .runLoop(thread: tick.thread, ns: tick.ns)
        guard armOthers(timedThread: tick.thread) else {
            releaseDeepSleep()
            return false
        }
        guard stallcap_thread_cpu_ns(tick.thread) == Int64(tick.ns), othersStill() else {
            stirred(by: 2)
            return false
        }
        // Woken by a watch or a timer: what woke it is spent, so the next deep sleep arms afresh.
        let timeoutNs = min(detector.thresholdNs, othersFirstSleepNs() ?? .max)
        let woken = stallcap_wd_deep_sleep(sequence, Int64(timeoutNs))
        if woken != 0 { stirred(by: woken) }
        return true
    }

    /// The main thread left its run loop's wait during a deep sleep or while it was armed (the watch or the timer
    /// woke it, or its clock moved): the main queue is checked at once, from its system call state (it may not have
    /// run yet when the watch woke the watchdog: the clock alone would then read it still in its wait, and the next
    /// check would come one interval into whatever the main thread began).
    func mainThreadStirred() {
        releaseDeepSleep()
        runLoopWait.lookAgain()
        detector.checkNow()
    }

    /// A deep sleep on the run loop ended early, `woken` as `stallcap_wd_deep_sleep` says: by an event loop's set
    /// (3) every other target is checked at once; by the run loop's set or a CPU clock (which one is not told),
    /// the main queue and every other target are.
    func stirred(by woken: Int32) {
        if woken == 3 {
            releaseDeepSleep()
        } else {
            mainThreadStirred()
        }
        othersStirred(setReady: woken == 3)
    }

    /// Rests on what is armed (`stallcap_wd_rest`), and again each time a rest ends by its timeout with nothing
    /// else to do: the main thread's CPU clock still where `tick` found it (it never left its trusted wait, which a
    /// check would only confirm), no event to drain (``ThreadMarkerRings/published``), no wake asked for
    /// (`sequence`), at most ``restsPerStep`` rests in all and never past the next real ping
    /// (``RunLoopWait/quietChecksLeft``). Each threshold rested after the check counts as a quiet check
    /// (``RunLoopWait/restedQuietly(_:)``), and each extra rest costs the clock read, the set's proof and the
    /// wait, without the loop's step (draining, writing, the detectors). A rest lasts a threshold,
    /// ``runLoopRestWhileWatchHolds`` while the watch cannot lose the main thread's wake
    /// (`stallcap_wd_watch_holds`: an AIO poll of the run loop's set is in flight): its timeout then only backstops
    /// what no watch sees (a main thread that blocks inside a signal handler that interrupted its wait). Returns
    /// what the last rest returned.
    func restWhileStill(sequence: UInt32, tick: (thread: Int32, ns: UInt64)) -> Int32 {
        let weight = stallcap_wd_watch_holds() == 1 ? Self.runLoopRestWhileWatchHolds : 1
        let restNs = min(detector.thresholdNs * UInt64(weight), othersRestNs() ?? .max)
        let most = min(
            Self.mostRests(quietChecksLeft: runLoopWait.quietChecksLeft, thresholdNs: detector.thresholdNs,
                restNs: restNs),
            othersMostRests(restNs: restNs))
        let (rests, woken) = rest(sequence: sequence, timeoutNs: Int64(restNs), most: most) {
            stallcap_thread_cpu_ns(tick.thread) == Int64(tick.ns) && othersStill()
        }
        runLoopWait.restedQuietly(Int(UInt64(rests) * restNs / detector.thresholdNs) - 1)
        othersRested(rests, restNs: restNs)
        return woken
    }

    /// How many thresholds a rest on the run loop lasts while the AIO watch holds: 3. Its timeout then backstops
    /// only a main thread that blocks inside a signal handler that interrupted its wait, and each wake costs the
    /// same whatever the rest's length: idle cost 0.25-0.28 ms/s resting two thresholds, 0.20-0.23 resting three
    /// (`stallprof-bench-capture idle 3 4 runloop`, two interleaved runs each, load 0.2-0.3, 2026-12-06).
    static let runLoopRestWhileWatchHolds = 3

    /// Rests on what is armed (`stallcap_wd_rest`, `timeoutNs` each), and again each time a rest ends by its
    /// timeout while no wake was asked for (`sequence`), no marker was published (``ThreadMarkerRings/published``)
    /// and `stillIdle` holds, up to `most` rests in all. Returns how many rests it took and what the last returned.
    func rest(sequence: UInt32, timeoutNs: Int64, most: Int, stillIdle: () -> Bool) -> (rests: Int, woken: Int32) {
        var rests = 1
        var woken = stallcap_wd_rest(sequence, timeoutNs)
        while woken == 0, rests < most, stallcap_wd_sequence() == sequence,
              !ThreadMarkerRings.shared.published.load(ordering: .relaxed), stillIdle()
        {
            rests += 1
            woken = stallcap_wd_rest(sequence, timeoutNs)
        }
        return (rests, woken)
    }

    /// Most rests in a row between two steps of the loop while the main thread idles in its run loop: 4, one step
    /// every one or two seconds at the default threshold (images loaded meanwhile are noted then).
    static let restsPerStep = 4

    /// Under `dispatchMain()` or an async `@main`: sleeps for half a threshold (two check intervals) instead of one,
    /// when the main queue was idle at this check and the one before (``DispatchQueueIdle``) and the rest of the
    /// process used less than ``processQuietNs`` of CPU since the check before. Two things wake the sleep early:
    /// a timer on the process's CPU clock, expiring after ``processQuietNs`` more of it (a busy block on the main
    /// queue wakes the watchdog within a millisecond and a scheduler tick of running), and libdispatch's event set
    /// (``watchDispatchEvents()``): a timer or source that posts a block wakes the watchdog with libdispatch's
    /// manager thread, however little the block runs. Either way the queue is checked at once; after a wake by the
    /// set the next sleep is one check interval (the block may not have been queued when the check read the
    /// queue). A block that blocks at once, posted by a thread that neither set woke and that ran less than
    /// ``processQuietNs`` (a plain thread's read or sleep ended), is seen at the next check: up to one check
    /// interval later than with a check every interval. A process busy elsewhere wakes the timer soon, and then
    /// checks every interval until it is quiet. The queue is read again after the arming: a block queued in
    /// between is not slept through.
    func sleepOnQueue(sequence: UInt32) -> Bool {
        let timeoutNs = Int64(detector.thresholdNs / 2)
        // Only after a check that read the queue idle: a step woken early with no check due sleeps as usual, so a
        // deep sleep always begins at a check and two intervals are the most between checks.
        guard queueQuietThisStep, dispatchIdle.isStill else {
            releaseDeepSleep()
            return false
        }
        // Armed without the set's watch (it woke a sleep less than half a threshold before, or no set was known):
        // armed afresh once it may be watched, not rested on for seconds without it.
        if case .queue(watched: false) = deepArmed, dispatchWatchDue(nowNs: stallcap_monotonic_ns()) {
            releaseDeepSleep()
        }
        if case .queue(let watched) = deepArmed {
            guard othersStill() else {
                releaseDeepSleep()
                return false
            }
            let woken = restOnQueueWhileIdle(sequence: sequence, timeoutNs: timeoutNs, watched: watched)
            reportLostDescriptors()
            if woken != 0 { wokenEarly(by: woken) }
            return woken >= 0
        }
        let quiet = processWasQuiet()
        if dispatchEventsWoke {
            dispatchEventsWoke = false
            return false
        }
        guard quiet else { return false }
        // The set's look and watch before the CPU timer: the timer counts this thread's CPU too.
        let setArmed = stallcap_wd_arm_set() == 0
        let watched = setArmed && watchDispatchEvents()
        let armed = setArmed && stallcap_wd_arm_cpu(0, configuration.signal, Int(Self.processQuietNs)) == 0
        reportLostDescriptors()
        guard armed else { return false }
        deepArmed = .queue(watched: watched)
        guard armOthers(timedThread: nil), DispatchQueueIdle.read().map(DispatchQueueIdle.isIdle) == true else {
            releaseDeepSleep()
            return false
        }
        guard othersStill() else {
            wokenEarly(by: 3)
            return false
        }
        let firstNs = min(UInt64(timeoutNs), othersFirstSleepNs() ?? .max)
        let woken = stallcap_wd_deep_sleep(sequence, Int64(firstNs))
        if woken != 0 { wokenEarly(by: woken) }
        return true
    }

    /// How long a look for libdispatch's event set that found none (or a watch of it that failed) holds
    /// (``watchDispatchEvents()``): 10 s after the first, doubling after each further miss up to 320 s. The set is
    /// made with libdispatch's first timer or source and never closed, so once found it is kept; until then a look
    /// reads each waiting thread's system call and the fdinfo of each epoll set waited in without a timeout: 3.5 ms
    /// with 250 threads, 16 ms when each waits on a set of 60 items (a reviewer's C model of the look), so repeated
    /// every 10 s it would cost more than the idle wakes.
    static func dispatchEventsLookNs(misses: Int) -> UInt64 { 10_000_000_000 << UInt64(min(max(misses - 1, 0), 5)) }

    /// True when a deep sleep armed now would watch libdispatch's event set, or look for it: the set did not wake a
    /// sleep in the last half threshold, and it is known or a look for it is due.
    func dispatchWatchDue(nowNs: UInt64) -> Bool {
        if dispatchEventsUnwatchable { return false }
        if let woke = dispatchEventsWokeNs, nowNs &- woke < detector.thresholdNs / 2 { return false }
        if dispatchEvents.fd >= 0 { return true }
        return dispatchEvents.lookedNs.map { nowNs &- $0 >= Self.dispatchEventsLookNs(misses: dispatchEvents.misses) }
            ?? true
    }

    /// Watches libdispatch's event set (`stallcap_dispatch_event_set`) for the deep sleep just armed: an AIO poll of
    /// a duplicate of it (`stallcap_wd_watch_dispatch`; never nested in the sleep's epoll set, which would change
    /// libdispatch's own `epoll_ctl`: wddispatch.c). It is the epoll set its manager thread waits in, which holds
    /// every dispatch timer's timerfd and every source's descriptor, so a block a timer or source posts to the main
    /// queue wakes the watchdog with the manager. False when it is not watched (``dispatchWatchDue(nowNs:)`` says
    /// no, no set is known, no AIO in this process, a run loop's poll still finishing): the sleep then keeps its CPU
    /// timer alone. Every timer and source of the
    /// process wakes the set, most of them for other queues, and each wake is two (the wake and the check interval
    /// after it): watched at once again, a 100 Hz timer on another queue would wake an idle watchdog some 28 times a
    /// second by reckoning, more than checking every interval (16); so not within half a threshold of its last
    /// wake. A watch that fails counts as a look that found nothing; only a watch that holds ends the back-off.
    func watchDispatchEvents() -> Bool {
        let now = stallcap_monotonic_ns()
        guard dispatchWatchDue(nowNs: now) else { return false }
        if dispatchEvents.fd < 0 {
            let found = stallcap_dispatch_event_set()
            dispatchEvents = (found, now, dispatchEvents.misses + (found < 0 ? 1 : 0))
        }
        guard dispatchEvents.fd >= 0 else { return false }
        switch stallcap_wd_watch_dispatch(dispatchEvents.fd) {
        case 0:
            dispatchEvents.misses = 0  // only a watch that holds ends the back-off
            return true
        case -2:
            return false  // a run loop's poll was still finishing: the next arming watches the set
        case -3:
            dispatchEventsUnwatchable = true  // no AIO in this process, and nesting the set is not done
            return false
        default:
            dispatchEvents = (-1, now, dispatchEvents.misses + 1)
            return false
        }
    }

    /// Rests on what is armed for the queue, and again each time a rest ends by its timeout with the queue read idle
    /// again (three loads of libdispatch's memory, the check's own reading), no marker published and no wake asked
    /// for, at most ``restsPerStep`` rests and never past the next real ping (``DispatchQueueIdle/quietChecksLeft``):
    /// each extra rest is a quiet check without the loop's step, whose Swift work cost as much as the wake on an
    /// idle CPU (0.6 ms/s at eight wakes a second at load 0.1). The process's CPU timer and the watch on
    /// libdispatch's event set stay armed across them, so busy work anywhere in the process still ends the rest
    /// within a millisecond of CPU and a tick, and a timer or source at once. A rest lasts half a threshold, a whole
    /// one while the arming watched the set (`watched`) and its AIO poll is in flight
    /// (`stallcap_wd_dispatch_watch_holds`): its timeout then only backstops a block posted by a thread that no
    /// dispatch source woke and that ran under a millisecond. Armed without that watch, no further rest is taken
    /// once the set may be watched again (``dispatchWatchDue(nowNs:)``). Idle on a quiet machine (load 0.02), the watchdog cost 0.58-0.60 ms/s resting half a threshold
    /// and 0.34-0.41 ms/s resting a whole one. Returns what the last rest returned.
    func restOnQueueWhileIdle(sequence: UInt32, timeoutNs: Int64, watched: Bool) -> Int32 {
        let weight = watched && stallcap_wd_dispatch_watch_holds() == 1 ? 2 : 1
        let halfNs = UInt64(timeoutNs)
        let restNs = min(halfNs * UInt64(weight), othersRestNs() ?? .max)
        let most = min(
            Self.mostRests(quietChecksLeft: dispatchIdle.quietChecksLeft, thresholdNs: halfNs, restNs: restNs),
            othersMostRests(restNs: restNs))
        let (rests, woken) = rest(sequence: sequence, timeoutNs: Int64(restNs), most: most) {
            // Armed without the set's watch, the rests end once it may be watched (sleepOnQueue arms afresh).
            DispatchQueueIdle.read().map(DispatchQueueIdle.isIdle) == true
                && (watched || !dispatchWatchDue(nowNs: stallcap_monotonic_ns())) && othersStill()
        }
        dispatchIdle.restedQuietly(Int(UInt64(rests) * restNs / halfNs) - 1)
        othersRested(rests, restNs: restNs)
        return woken
    }

    /// The process's CPU time (`woken` 2) or libdispatch's event set (1) woke a deep sleep on the queue: what woke
    /// it is spent, and the queue is checked at once.
    private func wokenEarly(by woken: Int32) {
        releaseDeepSleep()
        if woken == 1 { (dispatchEventsWoke, dispatchEventsWokeNs) = (true, stallcap_monotonic_ns()) }
        if woken != 3 { detector.checkNow() }
        othersStirred(setReady: woken == 3)
    }

    /// True when the process, this thread aside, used less than ``processQuietNs`` of CPU since the last look.
    func processWasQuiet() -> Bool {
        var process = timespec(), own = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &process)
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &own)
        let now = (process: UInt64(process.tv_sec) * 1_000_000_000 + UInt64(process.tv_nsec),
                   own: UInt64(own.tv_sec) * 1_000_000_000 + UInt64(own.tv_nsec))
        defer { lastProcessCPU = now }
        guard let last = lastProcessCPU else { return false }
        let others = (now.process &- last.process) &- (now.own &- last.own)
        return others < Self.processQuietNs
    }

    /// Disarms the deep sleep's timer, drains its signal and restores this thread's signal mask (threads that this
    /// one causes to be created, Dispatch workers a post may start, inherit it); nothing when not armed.
    func releaseDeepSleep() {
        guard deepArmed != nil else { return }
        stallcap_wd_disarm_cpu()
        releaseOthers()
        deepArmed = nil
    }

    /// Says once which of the deep sleep's descriptors someone else closed (they are left alone from then on).
    func reportLostDescriptors() {
        let lost = stallcap_wd_take_lost()
        if lost & STALLCAP_LOST_DEEP_SET != 0 {
            output.reportOnce("deep-set", "the watchdog's epoll set and stop pipe were closed by someone else (and "
                + "perhaps reused); they are left alone, and the watchdog checks every interval instead of sleeping deeply")
        }
        if lost & STALLCAP_LOST_WATCHED != 0 {
            output.reportOnce("deep-watched", "the watchdog's duplicate of the run loop's (or libdispatch's) epoll "
                + "descriptor was closed by someone else (and perhaps reused); it is left alone, and a new duplicate "
                + "is made")
        }
    }
}
