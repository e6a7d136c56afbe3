/// The quiet answers in a row of one way of answering pings without sending them (``RunLoopWait``: the main thread
/// sits in its run loop's wait; ``DispatchQueueIdle``: the main queue reads idle), and the rests the watchdog adds
/// after a check, which count as quiet answers too: one real ping still goes out at least every ``verifyEvery``.
struct QuietAnswers {
    /// Quiet answers in a row after which one real ping is sent anyway. 40: every 2.6 s at the default 250 ms
    /// threshold while checks come every 62.5 ms (~50 us of main-thread CPU per second), every 10 s once the
    /// watchdog sleeps deeply (a check per threshold).
    static let verifyEvery = 40

    /// Quiet answers since the last real ping, rests included.
    private(set) var inARow = 0

    /// True while one more quiet answer is allowed.
    var allowed: Bool { inARow < Self.verifyEvery }

    /// Quiet answers still allowed before a real ping is due.
    var left: Int { Self.verifyEvery - inARow }

    /// A check was answered quietly.
    mutating func answered() { inARow += 1 }

    /// A real ping goes out (or the state was forgotten): counting starts again.
    mutating func reset() { inARow = 0 }

    /// The watchdog rested `checks` more times after a check, each ending with nothing changed: they count as quiet
    /// answers, up to ``verifyEvery``.
    mutating func rested(_ checks: Int) { inARow = min(Self.verifyEvery, inARow + max(0, checks)) }
}
