import CStallCapture
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The answers to one target's pings. Written by the ping blocks on the target's thread: only atomics, so a ping
/// never blocks the thread it runs on.
final class PingAnswers: Sendable {
    /// The id of the latest ping answered (0 before any).
    let answeredPing = Atomic<UInt64>(0)
    /// When it was answered, monotonic nanoseconds.
    let answeredAt = Atomic<UInt64>(0)
    /// Which thread answered it.
    let answeredThread = Atomic<Int32>(0)
    /// That thread's CPU clock when it answered, nanoseconds.
    let answeredCPU = Atomic<UInt64>(0)
    /// The queue's drain-lock owner as the latest answer's block read it (-1: unreadable, or not a queue's
    /// answers): its own thread when libdispatch's layout is the one DispatchQueueIdle reads.
    let answeredOwner = Atomic<Int32>(-1)
    /// The libdispatch queue a serial queue's pings ran on (`stallcap_current_queue`; 0: none, or not a queue).
    let answeredQueue = Atomic<UInt>(0)
    /// Which queue the answers read: the main queue, the serial queue the ping runs on, or none (an executor).
    let reads: Reads

    /// What an answer reads of libdispatch's queues.
    enum Reads { case mainQueue, currentQueue, nothing }

    /// Answers that read `reads`.
    init(reading reads: Reads) { self.reads = reads }

    /// Records an answer; runs on the target's thread.
    func answer(ping id: UInt64) {
        let tid = stallcap_gettid()
        stallcap_warm_thread()  // once per thread: alternate stack and stack bounds before a handler needs them
        answeredThread.store(tid, ordering: .relaxed)
        answeredCPU.store(UInt64(max(0, stallcap_thread_cpu_ns(tid))), ordering: .relaxed)
        switch reads {
        case .mainQueue:
            answeredOwner.store(DispatchQueueIdle.read().map(DispatchQueueIdle.owner) ?? -1, ordering: .relaxed)
        case .currentQueue:
            let queue = stallcap_current_queue()
            answeredQueue.store(UInt(bitPattern: queue), ordering: .relaxed)
            answeredOwner.store(DispatchQueueIdle.read(queue).map(DispatchQueueIdle.owner) ?? -1, ordering: .relaxed)
        case .nothing: break
        }
        answeredAt.store(stallcap_monotonic_ns(), ordering: .relaxed)
        answeredPing.store(id, ordering: .releasing)
    }
}

/// One watched target on the watchdog thread: the main queue, or a ``StallTarget``. It holds what detects and
/// samples its episodes; the watchdog loop steps every target in turn (WatchdogLoop+Targets.swift) and drives
/// their episodes with the same code (WatchdogLoop+Episodes.swift).
final class WatchedTarget {
    /// The name its episodes carry in the capture (`main` for the main queue).
    let name: String
    /// Its durations: the watchdog's, with the target's threshold.
    let timing: WatchdogTiming
    /// Runs a ping on the target.
    let post: @Sendable (@escaping @Sendable () -> Void) -> Void
    /// Its pings' answers.
    let answers: PingAnswers
    var detector: StallDetector
    /// What is sampled now: nothing, presamples, a stall or a saturated episode.
    var episode = EpisodeState.idle
    /// The threads that answered its pings, to pick the one to sample.
    var threads = MainQueueThreads()
    /// Saturation detection, nil when off.
    var saturation: SaturationDetector?
    /// Finds what a blocked stall's thread waits for, once per stall.
    let blockedProbe: BlockedOnProbe
    /// The latest answered ping this loop has taken.
    var lastSeenPing: UInt64 = 0
    /// The CPU clock of the thread servicing the target, read once at the start of this step (nil when it is
    /// unknown or gone): the quiet check and the saturation check share it.
    var tickCPU: (thread: Int32, ns: UInt64)? = nil
    /// For a target with a thread of its own (an event loop): answers due pings without waking the thread while it
    /// sleeps in its loop's learned wait with its CPU clock still (``RunLoopWait``, learned per answering thread);
    /// nil until it answered, and for other targets.
    var loopWait: RunLoopWait? = nil
    /// True when ``loopWait`` applies: the target runs on one thread of its own.
    let hasOwnThread: Bool
    /// A ping answered quietly this step, for the detector's next step at the same time.
    var quietAnswer: StallDetector.Answer? = nil
    /// For the cooperative pool: where the runtime runs a job, to tell its threads; nil for other targets.
    let pool: PoolThreads.Code?
    /// The cooperative pool's starvation in progress: one member per pool thread, each with its episode (and no
    /// detector of its use), made by ``WatchdogLoop/beginStarvation(_:code:stallID:startNs:latestThread:)``.
    var members: [WatchedTarget] = []
    /// When the pool's threads were last looked for, monotonic nanoseconds.
    var poolLookedNs: UInt64 = 0
    /// The member sampled first at the next round (members are sampled a few per round).
    var nextMember = 0
    /// A pool member's pool, whose detector knows the ping outstanding; nil for other targets.
    private(set) weak var parent: WatchedTarget? = nil
    /// True when this target's blocked episodes take snapshots of every thread: false for a pool member after
    /// the first (one snapshot per starvation: the members' would be the same).
    var takesSnapshots = true
    /// The thread and CPU clock of the last quiet check that found the target's thread still in its trusted wait
    /// (``RunLoopWait/isStill``); nil after any other check. While that clock has not moved, the thread is still
    /// there: the deep sleep may cover the target (WatchdogLoop+DeepTargets.swift).
    var stillTick: (thread: Int32, ns: UInt64)? = nil
    /// That tick, when a deep sleep armed on it (a timer on the thread's clock, perhaps a watch on its epoll set);
    /// nil when not armed.
    var armedTick: (thread: Int32, ns: UInt64)? = nil
    /// The slot (1-64) of the AIO poll that watches its thread's epoll set during a deep sleep; 0: none.
    var watchSlot: Int32 = 0
    /// The thread's epoll set the deep sleep armed on ``armedTick`` watches; -1 when it watches none.
    var watchedSet: Int32 = -1
    /// A serial queue's libdispatch queue, once an answer found its drain lock held by the answering thread itself
    /// (the layout is the one read): nil until then, and for other targets.
    var confirmedQueue: UnsafeRawPointer? = nil

    /// A target named `name` with `timing`, pinged by `post`, its episodes numbered from `episodeIDs`.
    init(
        name: String, timing: WatchdogTiming, maxFrames: Int, answers: PingAnswers, episodeIDs: EpisodeIDs,
        hasOwnThread: Bool = false, pool: PoolThreads.Code? = nil,
        post: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void
    ) {
        (self.name, self.timing, self.answers, self.post) = (name, timing, answers, post)
        (self.hasOwnThread, self.pool, self.episodeIDs) = (hasOwnThread, pool, episodeIDs)
        self.maxFrames = maxFrames
        blockedProbe = BlockedOnProbe(timing: timing, maxFrames: maxFrames)
        detector = StallDetector(
            thresholdNs: timing.thresholdNs, sampleIntervalNs: timing.sampleIntervalNs, episodeIDs: episodeIDs)
        saturation = timing.saturationPeriodNs.map { periodNs in
            SaturationDetector(
                periodNs: periodNs, checkIntervalNs: timing.saturationCheckIntervalNs,
                sampleIntervalNs: timing.sampleIntervalNs)
        }
    }

    /// The episode numbers it takes, and most frames a sample keeps: a pool member's are its pool's.
    private let episodeIDs: EpisodeIDs, maxFrames: Int

    /// A member of the pool's starvation: its name, timing, answers and ping, with an episode of its own.
    func makeMember() -> WatchedTarget {
        let member = WatchedTarget(
            name: name, timing: timing, maxFrames: maxFrames, answers: answers, episodeIDs: episodeIDs, post: post)
        member.parent = self
        return member
    }

    /// The ping its stall waits for: its own detector's, or a pool member's pool's; nil when none is outstanding.
    var outstandingPingID: UInt64? { (parent ?? self).detector.outstandingPingID }

    /// True when the ping its stall waits for has been answered: the stall has ended (its detector will say so
    /// at its next step).
    var pingAnswered: Bool {
        guard let outstanding = outstandingPingID else { return false }
        return answers.answeredPing.load(ordering: .acquiring) >= outstanding
    }

    /// The thread holding a serial queue's drain lock now (running its work), when the queue's layout was confirmed
    /// and the thread exists; nil otherwise. A queue's work runs on whichever worker is free: the last answerer
    /// may be idle while another worker runs the stalled block.
    func drainingThread() -> Int32? {
        guard let owner = drainLockOwner(), owner > 0, stallcap_thread_cpu_ns(owner) >= 0 else { return nil }
        return owner
    }

    /// The tid holding a confirmed serial queue's drain lock now, 0 when none does (the queue waits for a worker,
    /// or is idle); nil for other targets, or when the queue cannot be read.
    func drainLockOwner() -> Int32? {
        confirmedQueue.flatMap { DispatchQueueIdle.read($0) }.map(DispatchQueueIdle.owner)
    }

    /// Reads the CPU clock of the thread that services the target, for this step.
    func readTickCPU() {
        tickCPU = detector.mainQueueThread.flatMap { thread in
            let cpu = stallcap_thread_cpu_ns(thread)
            return cpu >= 0 ? (thread, UInt64(cpu)) : nil
        }
    }

    /// The answer to a ping since the last look, noting who answered; nil when there is none.
    func takeAnswer() -> StallDetector.Answer? {
        let answered = answers.answeredPing.load(ordering: .acquiring)
        guard answered != lastSeenPing else { return nil }
        lastSeenPing = answered
        let thread = answers.answeredThread.load(ordering: .relaxed)
        let atNs = answers.answeredAt.load(ordering: .relaxed)
        threads.answered(by: thread, cpuNs: answers.answeredCPU.load(ordering: .relaxed))
        if hasOwnThread {
            if loopWait?.mainThread != thread {
                loopWait = RunLoopWait(mainThread: thread, waitCalls: RunLoopWait.targetWaitCalls)
            }
            loopWait?.answered(pingID: answered, by: thread, atNs: atNs)
        }
        if answers.reads == .currentQueue, confirmedQueue == nil,
            answers.answeredOwner.load(ordering: .relaxed) == thread
        {
            confirmedQueue = UnsafeRawPointer(bitPattern: answers.answeredQueue.load(ordering: .relaxed))
        }
        return .init(pingID: answered, atNs: atNs, threadID: thread)
    }

    /// Posts ping `id` to the target (after ``answersQuietly(pingID:)`` said no). When its thread sits in a wait not
    /// yet trusted, also tells its ``loopWait`` whether the post itself readied that wait: the thread did not run
    /// between the check's reading and the post (its CPU clock where ``tickCPU`` read it), the post took at most
    /// ``readiedWithinNs``, and within it the wait's token changed (`stallcap_wait_token`: its epoll set became
    /// ready, its futex word changed) or the thread's clock moved (it woke). A handler's own wait that ends by
    /// itself would have to do so within those microseconds, three times in a row. Not readied by a post measured
    /// so, a wait is suspected; when it could not be measured (the watchdog preempted around the post, the thread
    /// ran before it), the answer neither confirms nor suspects it.
    func sendPing(_ id: UInt64) {
        let answers = self.answers
        guard let wait = loopWait?.candidateWait, let thread = detector.mainQueueThread else {
            post { answers.answer(ping: id) }
            return
        }
        var before: UInt64 = 0, after: UInt64 = 0
        let readable = withUnsafePointer(to: wait.raw) { stallcap_wait_token($0, &before) } == 0
        let cpu = stallcap_thread_cpu_ns(thread)
        let startNs = stallcap_monotonic_ns()
        post { answers.answer(ping: id) }
        let readied = readable && withUnsafePointer(to: wait.raw) {
            stallcap_wait_token($0, &after) == 0 && stallcap_wait_stirred($0, before, after) == 1
        }
        let woke = readied || stallcap_thread_cpu_ns(thread) != cpu
        let prompt = stallcap_monotonic_ns() - startNs <= Self.readiedWithinNs
        let stillBefore = tickCPU.map { $0.thread == thread && Int64($0.ns) == cpu } ?? false
        // Measured only when prompt, from a still thread, and (not woken) with a token that could have shown it.
        loopWait?.postStirred(prompt && stillBefore && (woke || readable) ? woke : nil)
    }

    /// The longest a post and the readings around it may take for its answer to confirm a wait: 200 µs (the post
    /// itself takes a few; a watchdog preempted in between learns nothing from that ping).
    static let readiedWithinNs: UInt64 = 200_000

    /// True when ping `id`, due now, is answered by the target's thread sleeping still in its loop's learned wait
    /// (``loopWait``): then it is not sent, and ``quietAnswer`` holds the answer. A serial queue's checks are
    /// always pings: its own state reads idle while the queue it targets (another serial queue) runs a blocked block,
    /// or while it is suspended, and its ping would then wait (a reviewer's finding).
    func answersQuietly(pingID id: UInt64) -> Bool {
        stillTick = nil
        guard hasOwnThread, let thread = detector.mainQueueThread, loopWait?.mainThread == thread else { return false }
        readTickCPU()  // saturation's check this step reads it from here
        // No wake-up descriptor to look for (the executor's is its own): a place is learned from prompt answers.
        guard loopWait!.answersQuietly(
            pingID: id, nowNs: stallcap_monotonic_ns(), thread: thread, cpuNs: tickCPU?.ns,
            includesMainQueue: { _ in true }, read: { SyscallState(thread: thread) })
        else { return false }
        quietAnswer = .init(pingID: id, atNs: stallcap_monotonic_ns(), threadID: thread)
        if loopWait!.isStill { stillTick = tickCPU }
        return true
    }
}

/// The episode numbers of one capture, shared by every target's detector: episodes of all targets share one
/// numbering. Used on the watchdog thread only.
final class EpisodeIDs {
    private var next: UInt32 = 1

    /// Takes the next number.
    func take() -> UInt32 {
        defer { next &+= 1 }
        return next
    }
}
