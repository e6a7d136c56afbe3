/// Answers a due ping without waking the main thread, when the main thread is visibly idle in its run loop.
///
/// Waking the Swift main run loop to answer a ping costs ~120 us of main-thread CPU; at four pings per threshold
/// that was almost all of an idle app's watchdog cost. A run loop sleeps in one poll-family system call
/// (`epoll_wait`, `poll`, ...) at one place of its stack, and it only sleeps there with nothing to do: work posted
/// to the main queue wakes it. So when `/proc/self/task/<tid>/syscall` shows the main thread inside such a call
/// at that place (the same system call, stack pointer and instruction pointer), the main queue is responsive now,
/// exactly as if it had answered. Reading the file does not touch the main thread; and while the thread's CPU
/// clock has not moved since it was last seen in such a wait, it cannot have left it, so one clock read suffices
/// (the clock is read before the file: a thread that ran in between shows a moved clock at the next check).
///
/// The place is learned, never assumed: a wait becomes trusted after pings sent while the thread sat in it were
/// answered by that thread within ``promptNs`` ``confirmationsNeeded`` times in a row (the ping woke it), and must
/// be learned again when a ping sent while the thread sat in it was answered late or went unanswered into a stall.
/// An answer that merely comes eventually proves nothing: an app's own `poll` with a 50 ms timeout on the main
/// thread lets every ping through within 50 ms, yet the same call blocking for seconds is a stall. Nor does a
/// prompt one when the wait ends on its own every millisecond; so a place is learned only when its wait includes
/// libdispatch's main-queue wake-up descriptor (among the pollfds, or in the epoll set waited on), which a run loop
/// servicing the main queue always waits on and an app's own poll does not. Until a place is trusted, and whenever
/// the thread runs or sleeps anywhere else, the ping is sent as before. One real ping still goes out at least every ``verifyEvery`` quiet answers, so even a
/// wait that stopped servicing the queue (a run loop in a private mode at the same depth) is caught within that
/// many check intervals plus the threshold.
///
/// For the process's first thread: with `dispatchMain()` or an async `@main` the main queue is drained by pool
/// workers, any of which may run the next block, so one idle worker says nothing about the queue; there the
/// queue's own state answers (``DispatchQueueIdle``). Also for an executor target's own thread (an event loop,
/// ``StallTarget/executor(_:threshold:ping:)``), whose waits are learned the same way, without the wake-up
/// descriptor test (its executor's descriptor is its own), and may be futex waits too. A pure state machine:
/// readings come in, decisions go out.
struct RunLoopWait {
    /// Where a thread sleeps: the system call, and the user stack and instruction pointers at its entry.
    struct Signature: Hashable {
        var call: Int32
        var stackPointer: UInt64
        var programCounter: UInt64
    }

    /// Prompt answers in a row from a wait before it is trusted. 3: a wait that ends on its own (a timeout of
    /// T ms) answers within ``promptNs`` by chance with a probability of about 10/T each time (and such a wait is
    /// refused anyway when it does not include the main queue's descriptor).
    static let confirmationsNeeded = 3
    /// How soon a ping that woke the wait is answered. Measured: 40-200 us idle, up to 9 ms under a load of 9 on
    /// two cores. 10 ms: at 2 ms a loaded machine kept untrusting the genuine wait (each time three pings to learn
    /// it again: the idle cost rose from 0.8 to 1.2-1.6 ms/s at load 8).
    static let promptNs: UInt64 = 10_000_000
    /// Quiet answers in a row after which one real ping is sent anyway (``QuietAnswers/verifyEvery``).
    static let verifyEvery = QuietAnswers.verifyEvery
    /// Most waits remembered (a nested run loop adds one).
    static let capacity = 8

    /// The system calls run loops sleep in, on this architecture.
    static let pollCalls: Set<Int32> = {
        #if arch(x86_64)
        return [7, 23, 232, 270, 271, 281, 441]  // poll, select, epoll_wait, pselect6, ppoll, epoll_pwait, epoll_pwait2
        #else
        return [22, 72, 73, 441]  // epoll_pwait, pselect6, ppoll, epoll_pwait2
        #endif
    }()

    /// The thread this applies to: the process's first thread, or a watched target's own thread.
    let mainThread: Int32
    /// The system calls its idle wait may be: ``pollCalls`` for a run loop; for a target's thread also a futex
    /// wait (an executor that sleeps on a condition variable), learned by its place like any other.
    let waitCalls: Set<Int32>
    /// True for a target's thread: a wait is confirmed only by answers to pings whose post readied it
    /// (``postStirred(_:)``), and no wait deeper on the stack than one so confirmed is tried again. An executor's
    /// idle wait is its loop's, at the bottom of its stack; a handler's own wait (a synchronous query that polls a
    /// socket, a contended mutex) sits deeper, and answers pings promptly while it is short: learned, the same wait
    /// blocking for seconds was answered quietly (a reviewer's test: no episode at all in two runs of three). (The
    /// mark was once raised by any system call seen, and a handler's `usleep` above a condition variable's futex
    /// then kept that loop from ever being learned again.)
    let shallowestOnly: Bool
    /// The highest stack pointer of a wait that a post readied and a prompt answer confirmed (``shallowestOnly``).
    private var shallowestStackPointer: UInt64 = 0
    /// Answered pings sent from each wait seen, since it was last suspected.
    private var waits: [Signature: Int] = [:]
    /// Places whose wait does not include the main queue's wake-up descriptor (an app's own poll): never learned.
    private var rejected: Set<Signature> = []
    /// The ping sent while the thread sat in a wait not yet trusted.
    private var candidate: (pingID: UInt64, signature: Signature, sentNs: UInt64, wait: SyscallState, stirred: Bool?)? =
        nil
    private var quiet = QuietAnswers()
    /// The main thread's CPU clock when it was last seen in a trusted wait.
    private var quietAtCPU: UInt64? = nil
    /// True when the last check answered quietly because the main thread's clock had not moved since the check
    /// before: it slept in its run loop's wait for a whole check interval (the watchdog may sleep deeply).
    private(set) var isStill = false
    /// The reading of the trusted wait the main thread was last seen in.
    private(set) var trustedWait: SyscallState? = nil

    /// Creates the state for a process whose first thread is `mainThread`, or for a target's thread (`waitCalls`:
    /// ``targetWaitCalls``).
    init(mainThread: Int32, waitCalls: Set<Int32> = RunLoopWait.pollCalls) {
        self.mainThread = mainThread
        self.waitCalls = waitCalls
        shallowestOnly = waitCalls != Self.pollCalls
        quiet = QuietAnswers(limit: QuietAnswers.verifyEvery)
    }

    /// The waits a target's executor thread may idle in: a poll-family call (an event loop) or a futex wait (an
    /// executor on a condition variable). With them, a wait is learned only from posts that readied it
    /// (``shallowestOnly``).
    static let targetWaitCalls: Set<Int32> = {
        #if arch(x86_64)
        return pollCalls.union([202])  // futex
        #else
        return pollCalls.union([98])  // futex
        #endif
    }()

    /// A ping `pingID` is due at `nowNs` for `thread`, whose CPU clock read `cpuNs` (nil: unknown) just before,
    /// and whose system call state `read` returns: true when it is answered by what they show (do not send it),
    /// false when it must be sent (at `nowNs`). `read` is called only for the process's first thread, and only
    /// when its clock moved. `includesMainQueue` tells whether a wait includes the main queue's wake-up
    /// descriptor; it is asked once per place, before the place is learned.
    mutating func answersQuietly(
        pingID: UInt64, nowNs: UInt64, thread: Int32?, cpuNs: UInt64?,
        includesMainQueue: (SyscallState) -> Bool, read: () -> SyscallState
    ) -> Bool {
        candidate = nil
        isStill = false
        guard thread == mainThread else {
            forget()
            return false
        }
        if quiet.allowed, let cpuNs, cpuNs == quietAtCPU {
            quiet.answered()
            isStill = true
            return true
        }
        let state = read()
        guard state.kind == .inCall, waitCalls.contains(state.number),
            !shallowestOnly || state.stackPointer >= shallowestStackPointer
        else {
            forget()
            return false
        }
        let signature = Signature(
            call: state.number, stackPointer: state.stackPointer, programCounter: state.programCounter)
        guard trusts(signature), quiet.allowed else {
            forget()
            if waits[signature] == nil {
                // A new place: only a wait that the main queue's wake-up descriptor can end is a run loop's.
                guard !rejected.contains(signature) else { return false }
                guard includesMainQueue(state) else {
                    if rejected.count >= Self.capacity { rejected.removeAll() }
                    rejected.insert(signature)
                    return false
                }
            }
            candidate = (pingID, signature, nowNs, state, nil)
            return false
        }
        quiet.answered()
        quietAtCPU = cpuNs
        trustedWait = state
        return true
    }

    /// The next check reads the system call state again, and counts quiet answers from zero.
    private mutating func forget() {
        quiet.reset()
        quietAtCPU = nil
        isStill = false
    }

    /// Ping `pingID` was answered by `thread` at `atNs`.
    mutating func answered(pingID: UInt64, by thread: Int32, atNs: UInt64) {
        defer { candidate = nil }
        guard let candidate, candidate.pingID == pingID, thread == mainThread else { return }
        // Late, or (a target's thread) measured not readied by the ping's post (``postStirred(_:)``): the ping did not
        // wake it; it got through when the call ended.
        guard atNs <= candidate.sentNs + Self.promptNs, !shallowestOnly || candidate.stirred != false else {
            waits[candidate.signature] = nil
            return
        }
        // Not measured (the watchdog was preempted around the post): neither confirms nor suspects.
        if shallowestOnly && candidate.stirred == nil { return }
        // A target's thread: waits deeper than one a post readied are never tried again (a handler's own).
        if shallowestOnly { shallowestStackPointer = max(shallowestStackPointer, candidate.signature.stackPointer) }
        if waits[candidate.signature] == nil, waits.count >= Self.capacity, let oldest = waits.keys.first {
            waits[oldest] = nil
        }
        waits[candidate.signature, default: 0] += 1
    }

    /// A stall began on the ping that was outstanding: the wait it was sent from is suspected (it may not service
    /// the main queue) and must be confirmed again.
    mutating func stallBegan() {
        if let candidate { waits[candidate.signature] = nil }
        candidate = nil
        forget()
    }

    /// The wait the ping about to be sent is sent from, while that wait is a candidate to learn; nil otherwise.
    var candidateWait: SyscallState? { candidate?.wait }

    /// Whether the post of the ping sent from ``candidateWait`` readied that wait itself (`stallcap_wait_stirred`,
    /// read around the post, or the thread's clock moved within it): for a target's thread, only such answers
    /// confirm a wait. A handler's own wait on a loop never seen idle (a query polling its socket) lets a ping
    /// through promptly when it ends on its own, however often; it is never readied by the post, so it is never
    /// learned (a loop's idle wait is readied by every post: its wake-up descriptor, or its condition variable's
    /// futex word).
    /// Nil when it could not be told (the post took too long to read around it, the thread ran in between, or the
    /// wait has no token and the clock did not move): that answer neither confirms nor suspects the wait.
    mutating func postStirred(_ stirred: Bool?) { candidate?.stirred = stirred }

    /// The next check reads the main thread's system call state even if its clock has not moved: the watchdog was
    /// woken because the thread left its wait, and a thread woken but not yet run has the clock it had in the wait.
    mutating func lookAgain() {
        quietAtCPU = nil
        isStill = false
    }

    /// Quiet answers still allowed before a real ping is due: the most rests the watchdog may add, after the rest
    /// that follows this check, without a check of their own (``restedQuietly(_:)``); 0 unless the last check found
    /// the main thread still.
    var quietChecksLeft: Int { isStill ? quiet.left : 0 }

    /// The watchdog rested `checks` more times after the last check, each ending with the main thread's clock
    /// still where that check found it (it never left its trusted wait): they count as quiet answers, so the real
    /// ping still goes out after ``verifyEvery`` of them in all.
    mutating func restedQuietly(_ checks: Int) {
        if isStill { quiet.rested(checks) }
    }

    /// True when the quiet answers are spent while the thread was last seen in a trusted wait: its next check is a
    /// real ping.
    var verificationDue: Bool { quietAtCPU != nil && !quiet.allowed }

    /// Another thread's verification is due (``verificationDue``): when at least half of the quiet answers are
    /// spent, this one is verified at its next check too, so that the pings of several targets go out together
    /// and the watchdog stays awake for them once, not once per target.
    mutating func verifyAlong() {
        if quiet.inARow * 2 >= quiet.limit { quiet.rested(quiet.limit) }
    }

    /// True when `signature` is trusted (for tests).
    func trusts(_ signature: Signature) -> Bool {
        (waits[signature] ?? 0) >= Self.confirmationsNeeded
    }
}
