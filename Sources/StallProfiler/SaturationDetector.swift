/// Tells when the thread that services the main queue is saturated: it keeps answering pings, but it never sleeps.
/// A pure state machine like ``StallDetector``: fed with times and readings of the thread's clocks, it says when a
/// saturated episode begins, when to sample it and when it ends. No clocks, threads or I/O, so tests drive it with
/// made-up readings.
///
/// The criterion, over the whole sustained period (``periodNs``, 1 s by default):
/// - the thread made no voluntary context switch (`voluntary_ctxt_switches` did not move): a run loop that ever
///   runs out of work blocks in `epoll_wait`/`futex`, and every such sleep counts one; a thread that is only
///   preempted, however often (a loaded machine), counts none;
/// - and it was active (CPU time plus run-queue wait) for at least ``activeShare`` of the wall time, so a thread
///   that is stopped, traced or starved of CPU by something other than the run queue is not called saturated.
///
/// Cheap when idle: the thread's CPU clock is read once per check; `/proc` (wait and switch counters) only when
/// the clock moved by more than ``progressGate`` of the elapsed time, or while a window is open (the thread has
/// not slept since it passed the gate) or an episode is in progress.
struct SaturationDetector {
    /// What the watchdog loop must do next.
    enum Action: Equatable {
        /// A saturated episode began at `startNs` (the start of the sustained window) on thread `threadID`.
        case begin(startNs: UInt64, threadID: Int32)
        /// Take a sample of the saturated thread.
        case sample
        /// The episode ended at `endNs`: the thread slept voluntarily, stopped being active or went away.
        case end(endNs: UInt64)
    }

    /// The part of a reading that comes from `/proc`.
    struct Detail: Equatable {
        /// Total run-queue wait of the thread (schedstat), nanoseconds.
        var waitNs: UInt64
        /// Total voluntary context switches of the thread.
        var voluntarySwitches: UInt64
        /// True when the thread is on a CPU or in a run queue now (state `R`).
        var isRunnable: Bool

        /// Creates a detail reading.
        init(waitNs: UInt64, voluntarySwitches: UInt64, isRunnable: Bool = false) {
            self.waitNs = waitNs
            self.voluntarySwitches = voluntarySwitches
            self.isRunnable = isRunnable
        }
    }

    /// One full reading of the watched thread.
    struct Reading: Equatable {
        /// When it was taken, monotonic nanoseconds.
        var timeNs: UInt64
        /// The thread's CPU clock, nanoseconds.
        var cpuNs: UInt64
        /// Its total run-queue wait, nanoseconds.
        var waitNs: UInt64
        /// Its total voluntary context switches.
        var voluntarySwitches: UInt64
    }

    /// Share of wall time the thread must have been on a CPU or waiting for one. 0.75: a spinning thread on a
    /// machine with four other CPU hogs per two cores reads 0.95-1.0 (40 % CPU, the rest run-queue wait, which
    /// schedstat credits only when the thread gets the CPU again, so a reading may lag by one time slice); a
    /// stopped or descheduled thread reads near 0.
    static let activeShare = 0.75
    /// CPU progress between two checks, as a share of the elapsed time, below which `/proc` is not read and no
    /// window opens. 0.02, not 0.1: a saturated thread gets only its share of a core, and over one check interval
    /// much less at times: with eight hogs on two cores (and builds running: load 15-18) cell-height's endless loop
    /// made 0-6 % progress per check, so no window ever opened (0 of 3 runs saturated); an idle main thread uses
    /// well under 1 %. Once a window is open it stays open, whatever the progress, until the thread sleeps.
    static let progressGate = 0.02

    /// The sustained period.
    let periodNs: UInt64
    /// Time between two checks of the thread's clocks.
    let checkIntervalNs: UInt64
    /// Time between samples during an episode.
    let sampleIntervalNs: UInt64

    /// True while a saturated episode is in progress.
    private(set) var isSaturated = false
    /// Readings since the last voluntary switch, oldest first; trimmed to the newest reading at least a period old.
    private var history: [Reading] = []
    private var lastCheck: (timeNs: UInt64, cpuNs: UInt64, threadID: Int32)? = nil
    /// When the last check ran, also one that found no thread or no clock to read (nil: a check is due now).
    private var lastAttemptNs: UInt64? = nil
    private var samples: SampleSchedule
    /// True when the previous check of an episode saw voluntary switches.
    private var switchedAtLastCheck = false

    /// Creates a detector.
    init(periodNs: UInt64, checkIntervalNs: UInt64, sampleIntervalNs: UInt64) {
        self.periodNs = periodNs
        self.checkIntervalNs = max(checkIntervalNs, 1_000_000)
        self.sampleIntervalNs = sampleIntervalNs
        samples = SampleSchedule(intervalNs: sampleIntervalNs)
    }

    /// Forgets everything (a stall began, or the watched thread changed); no end action is produced.
    mutating func reset() {
        isSaturated = false
        history.removeAll()
        lastCheck = nil
        lastAttemptNs = nil
        switchedAtLastCheck = false
    }

    /// Advances to `nowNs`. `threadID` is the thread servicing the main queue (nil when unknown); `cpu` reads its
    /// CPU clock (nil when it is gone) and `detail` reads `/proc` (nil when unreadable). Both are called only when
    /// a check is due, `detail` only when the thread made progress or an episode is in progress.
    mutating func step(
        nowNs: UInt64, threadID: Int32?, cpu: () -> UInt64?, detail: () -> Detail?
    ) -> [Action] {
        var actions: [Action] = []
        let checkDue = lastAttemptNs.map { nowNs &+ checkIntervalNs / 8 >= $0 &+ checkIntervalNs } ?? true
        if checkDue {
            lastAttemptNs = nowNs
            actions = check(nowNs: nowNs, threadID: threadID, cpu: cpu, detail: detail)
        }
        if isSaturated && samples.isDue(atNs: nowNs) {
            actions.append(.sample)
            samples.took(atNs: nowNs)
        }
        return actions
    }

    /// A sample ended at `endNs`: the next is due no sooner than half an interval after it
    /// (``SampleSchedule/ended(atNs:)``).
    mutating func sampleEnded(atNs endNs: UInt64) { samples.ended(atNs: endNs) }

    /// When the next step is due. A check that found no thread to watch (nothing has serviced the main queue yet)
    /// is tried again a check interval later, not at once: the watchdog thread would never sleep.
    func nextWakeNs(nowNs: UInt64) -> UInt64 {
        let check = lastAttemptNs.map { max(nowNs, $0 &+ checkIntervalNs) } ?? nowNs
        return isSaturated ? min(check, max(nowNs, samples.dueNs)) : check
    }

    private mutating func check(
        nowNs: UInt64, threadID: Int32?, cpu readCPU: () -> UInt64?, detail: () -> Detail?
    ) -> [Action] {
        guard let threadID, let cpu = readCPU() else {
            lastCheck = nil
            return stop(nowNs)
        }
        defer { lastCheck = (nowNs, cpu, threadID) }
        guard let previous = lastCheck, previous.threadID == threadID, cpu >= previous.cpuNs,
            nowNs > previous.timeNs
        else { return stop(nowNs) }
        let progressed = Double(cpu - previous.cpuNs) >= Self.progressGate * Double(nowNs - previous.timeNs)
        if !isSaturated && !progressed && history.isEmpty { return [] }
        guard let detail = detail() else { return stop(nowNs) }
        let reading = Reading(timeNs: nowNs, cpuNs: cpu, waitNs: detail.waitNs, voluntarySwitches: detail.voluntarySwitches)
        if let last = history.last, last.voluntarySwitches != reading.voluntarySwitches || reading.waitNs < last.waitNs {
            // During an episode, switches seen by one check only (page faults waiting for a page, a lock whose
            // holder was preempted: on a loaded machine, one run in five saw such a burst) do not end it; switches
            // in two consecutive checks (a run loop that sleeps between turns again) do, and so does a thread that
            // went idle (it is no longer active, below).
            let isolated = reading.voluntarySwitches > last.voluntarySwitches && reading.waitNs >= last.waitNs
            guard isSaturated, isolated, !switchedAtLastCheck else {
                let ended = stop(nowNs)
                // The window starts again here, if the thread is busy enough to open one.
                history = progressed ? [reading] : []
                return ended
            }
            switchedAtLastCheck = true
        } else {
            switchedAtLastCheck = false
        }
        history.append(reading)
        let tolerance = checkIntervalNs / 8
        if let keep = history.lastIndex(where: { nowNs &+ tolerance >= $0.timeNs &+ periodNs }), keep > 0 {
            history.removeFirst(keep)
        }
        if isSaturated {
            // Still active over the last quarter period (at least one check interval)? A thread in a run queue
            // now is: schedstat credits its current wait only when it gets a CPU, so under heavy load the recent
            // share can read low while the thread waits.
            guard !detail.isRunnable else { return [] }
            let span = max(checkIntervalNs, periodNs / 4)
            guard let from = history.last(where: { nowNs &+ tolerance >= $0.timeNs &+ span }) ?? history.first,
                from != reading
            else { return [] }
            return Self.activeShare(from: from, to: reading) < Self.activeShare ? stop(nowNs) : []
        }
        // A thread that made no CPU progress since the previous check, did not sleep (no voluntary switch) and is
        // runnable now has waited for a CPU since that check: a wait schedstat credits only when it ends.
        let waiting = detail.isRunnable && cpu == previous.cpuNs ? nowNs - previous.timeNs : 0
        guard let first = history.first, nowNs &+ tolerance >= first.timeNs &+ periodNs,
            Self.activeShare(from: first, to: reading, pendingWaitNs: waiting) >= Self.activeShare
        else { return [] }
        isSaturated = true
        samples.start(atNs: nowNs)
        return [.begin(startNs: first.timeNs, threadID: threadID)]
    }

    /// Ends the episode in progress, if any, and closes the window.
    private mutating func stop(_ nowNs: UInt64) -> [Action] {
        history.removeAll()
        switchedAtLastCheck = false
        guard isSaturated else { return [] }
        isSaturated = false
        return [.end(endNs: nowNs)]
    }

    /// (CPU + run-queue wait) / wall time between two readings, at most 1; `pendingWaitNs` is wait not yet
    /// credited at `end`.
    static func activeShare(from start: Reading, to end: Reading, pendingWaitNs: UInt64 = 0) -> Double {
        guard end.timeNs > start.timeNs else { return 0 }
        let cpu = end.cpuNs &- min(start.cpuNs, end.cpuNs)
        let wait = (end.waitNs &- min(start.waitNs, end.waitNs)) &+ pendingWaitNs
        return min(1, Double(cpu &+ wait) / Double(end.timeNs - start.timeNs))
    }
}
