import CStallCapture

/// Answers a due ping without posting one under `dispatchMain()` or an async `@main`, when libdispatch's main
/// queue is visibly idle: nothing queued and nobody draining it.
///
/// There the main queue is drained by pool workers, so an idle worker says nothing about the queue and
/// ``RunLoopWait`` does not apply; a ping wakes a worker (and the watchdog) at every check. But the queue's own
/// state says what a ping would find: its drain lock holds the id of the thread running a block (a stall in
/// progress, whatever that thread does), its enqueued bit says it waits for a worker (a starved pool), its items
/// tail that blocks are queued. When all are clear, a ping posted now would run at once: the check counts as an
/// answer, at the check's time, and nothing is posted.
///
/// The layout is libdispatch's private one (mainqueue.c), so it is trusted only when checked twice: statically
/// (`stallcap_main_queue_layout`), and against ``confirmationsNeeded`` real pings whose block found its own thread
/// in the drain lock; one that found another refutes it for the rest of the run. One real ping still goes out at
/// least every ``verifyEvery`` quiet answers. A watched queue that is not the main queue (the configuration's
/// `post`) refutes it at its first ping, whose block does not hold the main queue's lock. A pure state machine:
/// readings come in, decisions go out.
struct DispatchQueueIdle {
    /// Pings, answered by a worker that found itself in the drain lock, before the layout is trusted.
    static let confirmationsNeeded = 3
    /// Quiet answers in a row after which one real ping is sent anyway (``QuietAnswers/verifyEvery``; every 5 s
    /// at the default threshold).
    static let verifyEvery = QuietAnswers.verifyEvery

    /// The drain lock's owner: a thread id (libdispatch's DLOCK_OWNER_MASK on Linux).
    static let ownerMask: UInt64 = 0x3fff_ffff
    /// The queue is enqueued on its root queue, waiting for a worker (DISPATCH_QUEUE_ENQUEUED).
    static let enqueuedBit: UInt64 = 1 << 31
    /// Blocks were queued while it was drained (DISPATCH_QUEUE_DIRTY).
    static let dirtyBit: UInt64 = 1 << 39
    /// A barrier, which every block of a serial queue is, is running (DISPATCH_QUEUE_IN_BARRIER).
    static let inBarrierBit: UInt64 = 1 << 54
    /// The queue is still bound to the main thread's run loop (DQF_THREAD_BOUND): before dispatchMain().
    static let threadBoundFlag: UInt32 = 0x40000

    /// True when the static check found the layout this reads.
    let layoutKnown: Bool
    /// Real pings whose block found its own thread in the drain lock.
    private(set) var confirmations = 0
    /// True once a ping's block found another thread (or none) in the drain lock: never trusted again.
    private(set) var refuted = false
    private var quiet = QuietAnswers()
    /// True when the latest check was answered by the queue's reading: no thread services the main queue now.
    private(set) var lastWasQuiet = false

    /// Creates the state; `layoutKnown` is `stallcap_main_queue_layout() == 1` in the watchdog.
    init(layoutKnown: Bool) { self.layoutKnown = layoutKnown }

    /// True when the last two checks were answered quietly (the watchdog may sleep deeply).
    var isStill: Bool { quiet.inARow >= 2 }

    /// True when the layout may be used to answer pings.
    var isTrusted: Bool { layoutKnown && !refuted && confirmations >= Self.confirmationsNeeded }

    /// A real ping was answered by `thread`, whose block read the drain lock's owner `owner` (nil: not read).
    /// Answers by the process's first thread (`mainThread`: a run loop drains the queue there) say nothing.
    mutating func answered(by thread: Int32, owner: Int32?, mainThread: Int32) {
        guard layoutKnown, thread != mainThread, let owner else { return }
        if owner == thread { confirmations += 1 } else { refuted = true }
    }

    /// True when `reading` shows the queue handed to the pool and idle: nothing queued, enqueued, dirty or being
    /// drained.
    static func isIdle(_ reading: stallcap_main_queue_reading) -> Bool {
        let busy = ownerMask | enqueuedBit | dirtyBit | inBarrierBit
        return reading.flags & threadBoundFlag == 0 && reading.state & busy == 0 && reading.tail == 0
    }

    /// A ping is due and the queue read `reading` (nil: unreadable): true when it is answered by the reading
    /// (do not send it).
    mutating func answersQuietly(_ reading: stallcap_main_queue_reading?) -> Bool {
        guard isTrusted, let reading, Self.isIdle(reading), quiet.allowed else {
            quiet.reset()
            lastWasQuiet = false
            return false
        }
        quiet.answered()
        lastWasQuiet = true
        return true
    }

    /// Quiet answers still allowed before a real ping is due (0 unless the queue read quiet at the last two
    /// checks): the most rests the watchdog may add without a check of its own (``restedQuietly(_:)``).
    var quietChecksLeft: Int { isStill ? quiet.left : 0 }

    /// The watchdog rested `checks` more times, each ending with the queue read idle again: they count as quiet
    /// answers, so the real ping still goes out after ``verifyEvery`` of them in all.
    mutating func restedQuietly(_ checks: Int) {
        if isStill { quiet.rested(checks) }
    }

    /// The thread running the queue's block now, read from the drain lock: nil unless the layout is trusted, the
    /// queue is handed to the pool and a thread holds the lock. Exactly the thread to sample under `dispatchMain()`:
    /// the pool worker draining it, or a thread inside `DispatchQueue.main.sync`, which runs the block itself.
    func drainingThread() -> Int32? {
        guard isTrusted, let reading = Self.read(), reading.flags & Self.threadBoundFlag == 0 else { return nil }
        let owner = Self.owner(reading)
        return owner > 0 ? owner : nil
    }

    /// The tid holding `reading`'s drain lock, 0 when none does.
    static func owner(_ reading: stallcap_main_queue_reading) -> Int32 { Int32(reading.state & ownerMask) }

    /// The queue as it is now, or nil without libdispatch.
    static func read() -> stallcap_main_queue_reading? {
        var reading = stallcap_main_queue_reading()
        return stallcap_main_queue_read(&reading) == 0 ? reading : nil
    }

    /// The state of the libdispatch queue `queue` (``stallcap_current_queue()`` of a block it ran); nil when it is
    /// nil or cannot be read.
    static func read(_ queue: UnsafeRawPointer?) -> stallcap_main_queue_reading? {
        var reading = stallcap_main_queue_reading()
        return stallcap_queue_read(queue, &reading) == 0 ? reading : nil
    }
}
