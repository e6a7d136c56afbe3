/// The quiet answers in a row of one way of answering pings without sending them (``RunLoopWait``: the main thread
/// sits in its run loop's wait; ``DispatchQueueIdle``: the main queue reads idle), and the rests the watchdog adds
/// after a check, which count as quiet answers too: one real ping still goes out at least every ``verifyEvery``.
struct QuietAnswers {
    /// Quiet answers in a row after which one real ping is sent anyway. 40: every 2.6 s at the default 250 ms
    /// threshold while checks come every 62.5 ms (~50 us of main-thread CPU per second), every 10 s once the
    /// watchdog sleeps deeply (a check per threshold). An executor target's thread (``RunLoopWait/targetWaitCalls``)
    /// verifies as often: its wait is learned only from pings whose post readied it
    /// (``RunLoopWait/postStirred(_:)``), so a handler's own wait is never learned (it was, from prompt answers
    /// alone, and a real ping every 8 checks was needed then to catch a stall in it).
    static let verifyEvery = 40

    /// Quiet answers in a row after which one real ping is sent anyway.
    let limit: Int
    /// Quiet answers since the last real ping, rests included.
    private(set) var inARow = 0

    /// Counts up to `limit` (default ``verifyEvery``).
    init(limit: Int = QuietAnswers.verifyEvery) { self.limit = limit }

    /// True while one more quiet answer is allowed.
    var allowed: Bool { inARow < limit }

    /// Quiet answers still allowed before a real ping is due.
    var left: Int { limit - inARow }

    /// A check was answered quietly.
    mutating func answered() { inARow += 1 }

    /// A real ping goes out (or the state was forgotten): counting starts again.
    mutating func reset() { inARow = 0 }

    /// The watchdog rested `checks` more times after a check, each ending with nothing changed: they count as quiet
    /// answers, up to ``verifyEvery``.
    mutating func rested(_ checks: Int) { inARow = min(limit, inARow + max(0, checks)) }
}
