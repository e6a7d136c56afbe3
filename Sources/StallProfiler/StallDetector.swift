/// The watchdog's timing logic as a pure state machine: fed with times and ping answers, it says when to ping,
/// when a stall begins, when to sample and when the stall ends. No clocks, threads or I/O, so tests drive it
/// with made-up times.
struct StallDetector {
    /// What the watchdog loop must do next.
    enum Action: Equatable {
        /// Send ping `id` to the main queue.
        case sendPing(id: UInt64)
        /// A stall began at `startNs` (when its unanswered ping was sent) on thread `threadID`.
        case beginStall(stallID: UInt32, startNs: UInt64, threadID: Int32)
        /// Take a sample of the stalled thread.
        case sample(stallID: UInt32)
        /// A ping has been unanswered for half a ping period: sample the thread into a bounded buffer, which
        /// ``beginStall(stallID:startNs:threadID:)`` keeps (its samples belong to the stall) and
        /// ``discardPresamples`` drops.
        case presample
        /// The ping was answered before the threshold (or went stale): drop the buffered presamples.
        case discardPresamples
        /// The stall ended when the main queue answered, at `endNs`.
        case endStall(stallID: UInt32, endNs: UInt64)
        /// The first ping has gone unanswered past the threshold: nothing services the main queue (yet), so there
        /// is no thread to sample. Reported once; not a stall.
        case noRunLoop
    }

    /// An answered ping.
    struct Answer: Equatable {
        var pingID: UInt64
        var atNs: UInt64
        var threadID: Int32
    }

    private enum Phase: Equatable {
        case idle
        case waiting(pingID: UInt64, sentNs: UInt64, presampling: Bool)
        case stalled(pingID: UInt64, stallID: UInt32)
    }

    /// Main queue unresponsive this long makes a stall.
    let thresholdNs: UInt64
    /// Time between pings while the main queue answers.
    let pingPeriodNs: UInt64
    /// Time between samples during a stall.
    let sampleIntervalNs: UInt64

    private var phase = Phase.idle
    private var nextPingID: UInt64 = 1
    /// Where episode numbers come from: shared by every watched target's detector.
    private let episodeIDs: EpisodeIDs
    private var lastPingNs: UInt64? = nil
    private var samples: SampleSchedule
    private var reportedNoRunLoop = false
    /// How long the outstanding ping waits before presampling: ``presampleDelayNs``, or a whole ping period
    /// after ``pingIsRoutine()``.
    private var currentPresampleDelayNs: UInt64 = 0
    /// How early a due ping may go out: with several targets watched, a target whose ping falls due within this of
    /// a wake pings at that wake, so that the targets' pings come together and the watchdog wakes once for them
    /// all. 0 (exactly on time) for the main queue alone.
    var pingSlackNs: UInt64 = 0
    /// The ping the main queue has not answered yet (waiting or stalled), nil when none is outstanding.
    var outstandingPingID: UInt64? {
        switch phase {
        case .idle: return nil
        case .waiting(let pingID, _, _), .stalled(let pingID, _): return pingID
        }
    }
    /// The thread that serviced the latest answered ping: the one to sample. Nil until the first answer.
    private(set) var mainQueueThread: Int32? = nil
    /// True when a late ping is a stall before any ping was answered (the cooperative pool: its threads are found
    /// when it starves, not from the answers); the stall's thread is then 0. False (the default): nothing serves
    /// the target until it answered once, and no stall is declared.
    var stallsBeforeAnAnswer = false

    /// Creates a detector that numbers episodes from `episodeIDs`. The ping period is a quarter of the threshold (at
    /// least 1 ms).
    init(thresholdNs: UInt64, sampleIntervalNs: UInt64, episodeIDs: EpisodeIDs = EpisodeIDs()) {
        self.episodeIDs = episodeIDs
        self.thresholdNs = thresholdNs
        self.pingPeriodNs = WatchdogTiming.pingPeriodNs(thresholdNs: thresholdNs)
        self.sampleIntervalNs = sampleIntervalNs
        samples = SampleSchedule(intervalNs: sampleIntervalNs)
    }

    /// How long a ping stays unanswered before presampling starts: half a ping period, so that samples begin
    /// within one ping interval of the first unanswered ping even when the loop wakes late.
    var presampleDelayNs: UInt64 { pingPeriodNs / 2 }

    /// Most presamples worth keeping: the threshold's worth at the sample interval, and a few more.
    var presampleCapacity: Int { Int(thresholdNs / max(sampleIntervalNs, 1)) + 4 }

    /// The ping just sent is routine (nothing suggested the main queue is busy: with `dispatchMain()` every check
    /// is a ping): presampling waits a whole ping period instead of half of one, so an answered routine ping costs
    /// the watchdog one wake per period, not two. Samples of a stall then begin at most one ping period later.
    mutating func pingIsRoutine() {
        guard case .waiting(_, _, false) = phase else { return }
        currentPresampleDelayNs = pingPeriodNs
    }

    /// Takes the next episode number. Stalls and saturated episodes, of every watched target, share one sequence.
    func takeEpisodeID() -> UInt32 { episodeIDs.take() }

    /// True when no ping is outstanding and no stall is in progress.
    var isIdle: Bool { phase == .idle }

    /// Makes the next step check the main queue at once when no ping is outstanding (a deep sleep woken early by
    /// CPU time: something may have begun on the queue).
    mutating func checkNow() {
        if case .idle = phase { lastPingNs = nil }
    }

    /// A sample (or presample) ended at `endNs`: the next is due no sooner than half an interval after it
    /// (``SampleSchedule/ended(atNs:)``).
    mutating func sampleEnded(atNs endNs: UInt64) { samples.ended(atNs: endNs) }

    /// The number of the stall in progress, nil when none is.
    var stallID: UInt32? {
        if case .stalled(_, let id) = phase { return id }
        return nil
    }

    /// True while a stall is in progress.
    var isStalled: Bool {
        if case .stalled = phase { return true }
        return false
    }

    /// Advances to `nowNs`, taking `answer` (the latest answered ping, if any) into account. `pausedNs` is time
    /// the process was stopped since the previous step (``PauseDetector``), 0 when none.
    mutating func step(nowNs: UInt64, answer: Answer?, pausedNs: UInt64 = 0) -> [Action] {
        var actions: [Action] = []
        step(nowNs: nowNs, answer: answer, pausedNs: pausedNs, into: &actions)
        return actions
    }

    /// ``step(nowNs:answer:pausedNs:)`` appending to `actions`, so that the watchdog loop reuses one buffer instead
    /// of allocating an array on each of its 16 idle steps a second.
    mutating func step(nowNs: UInt64, answer: Answer?, pausedNs: UInt64 = 0, into actions: inout [Action]) {
        if let answer {
            mainQueueThread = answer.threadID
            switch phase {
            case .waiting(let id, _, let presampling) where id == answer.pingID:
                if presampling { actions.append(.discardPresamples) }
                phase = .idle
            case .stalled(let id, let stallID) where id == answer.pingID:
                actions.append(.endStall(stallID: stallID, endNs: answer.atNs))
                phase = .idle
            default:
                break
            }
        }
        // If the process was stopped since the previous step (SIGSTOP, a frozen cgroup, a debugger), the
        // outstanding ping's age says nothing about the main thread: ping again. A watchdog that only waited for a
        // CPU (a loaded machine), however long, keeps its ping: the main thread was runnable too, and time spent
        // runnable but not running is stall time.
        if case .waiting(_, _, let presampling) = phase, pausedNs > 0 {
            if presampling { actions.append(.discardPresamples) }
            phase = .idle
            lastPingNs = nil
        }
        switch phase {
        case .idle:
            if lastPingNs.map({ nowNs &+ pingSlackNs >= $0 + pingPeriodNs }) ?? true {
                actions.append(.sendPing(id: nextPingID))
                phase = .waiting(pingID: nextPingID, sentNs: nowNs, presampling: false)
                currentPresampleDelayNs = presampleDelayNs
                lastPingNs = nowNs
                nextPingID += 1
            }
        case .waiting(let id, let sentNs, let presampling):
            if nowNs < sentNs + thresholdNs {
                guard mainQueueThread != nil, nowNs >= sentNs + currentPresampleDelayNs else { break }
                if !presampling {
                    phase = .waiting(pingID: id, sentNs: sentNs, presampling: true)
                    samples.start(atNs: nowNs)
                }
                if samples.isDue(atNs: nowNs) {
                    actions.append(.presample)
                    samples.took(atNs: nowNs)
                }
                break
            }
            guard let thread = mainQueueThread ?? (stallsBeforeAnAnswer ? 0 : nil) else {
                if !reportedNoRunLoop {
                    reportedNoRunLoop = true
                    actions.append(.noRunLoop)
                }
                break
            }
            let stallID = takeEpisodeID()
            phase = .stalled(pingID: id, stallID: stallID)
            actions.append(.beginStall(stallID: stallID, startNs: sentNs, threadID: thread))
            // Presampling continues on its schedule; otherwise sampling starts now.
            if !presampling || samples.isDue(atNs: nowNs) {
                actions.append(.sample(stallID: stallID))
                if presampling { samples.took(atNs: nowNs) } else { samples.tookFirst(atNs: nowNs) }
            }
        case .stalled(_, let stallID):
            if samples.isDue(atNs: nowNs) {
                actions.append(.sample(stallID: stallID))
                samples.took(atNs: nowNs)
            }
        }
    }

    /// When the next step is due, given the current time.
    func nextWakeNs(nowNs: UInt64) -> UInt64 {
        switch phase {
        case .idle: return max(nowNs, (lastPingNs ?? nowNs) + pingPeriodNs)
        case .waiting(_, let sentNs, let presampling):
            // Nothing services the queue and the threshold passed (no stall to declare): look once per ping
            // period, not in a loop that never sleeps.
            if mainQueueThread == nil && !stallsBeforeAnAnswer && nowNs >= sentNs + thresholdNs {
                return nowNs + pingPeriodNs
            }
            // Look for the answer often enough to end stalls promptly, wake at the threshold, and to presample.
            let next = min(max(nowNs, sentNs + thresholdNs), nowNs + pingPeriodNs)
            guard mainQueueThread != nil else { return next }
            let presample = presampling ? samples.dueNs : sentNs + currentPresampleDelayNs
            return min(next, max(nowNs, presample))
        case .stalled: return min(max(nowNs, samples.dueNs), nowNs + sampleIntervalNs)
        }
    }
}
