import StallFormat

/// One plain-language hint about an episode, a group or a profile: what kind it is (stable, for programs) and the
/// sentence the text prints after `hint: `.
public struct ReportHint: Sendable, Equatable {
    /// `recursion`, `run-loop-reentry`, `no-app-code`, `truncated` or `signal-blocked` (docs/REPORT.md, "Hints").
    public var kind: String
    /// The sentence, e.g. "the thread blocks SIGPROF: no stacks".
    public var text: String

    /// Creates a hint.
    public init(kind: String, text: String) {
        self.kind = kind
        self.text = text
    }

    /// The hint for an episode whose thread blocks the capture signal (its signal-mask record says so), or nil.
    /// `stacks`: its samples with a stack; `signalled`: those of them the signal took (not read from the thread's
    /// memory while it slept in a system call), which show that it did not block the signal all along.
    static func signalBlocked(_ mask: SignalMaskRecord?, stacks: Int, signalled: Int) -> ReportHint? {
        guard let mask, mask.blocksSignal else { return nil }
        let name = SignalNames.name(mask.signal)
        let text = stacks == 0 ? "the thread blocks \(name): no stacks"
            : signalled == 0 ? "the thread blocks \(name): no stacks while it runs; the \(StallReport.samples(stacks)) "
                + "with a stack were read from its memory while it was in system calls"
            : "the thread blocked \(name) for part of the episode: its stacks while it ran then are missing"
        return ReportHint(kind: "signal-blocked", text: text)
    }
}

/// Names of Linux signals (the numbering of x86_64 and aarch64), as `kill -l` prints them.
public enum SignalNames {
    static let standard = [
        1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE",
        9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM",
        16: "SIGSTKFLT", 17: "SIGCHLD", 18: "SIGCONT", 19: "SIGSTOP", 20: "SIGTSTP", 21: "SIGTTIN", 22: "SIGTTOU",
        23: "SIGURG", 24: "SIGXCPU", 25: "SIGXFSZ", 26: "SIGVTALRM", 27: "SIGPROF", 28: "SIGWINCH", 29: "SIGIO",
        30: "SIGPWR", 31: "SIGSYS",
    ]

    /// `SIGPROF` for 27; `SIGRTMIN`, `SIGRTMIN+3` for glibc's real-time signals (34 and up); `signal N` otherwise.
    public static func name(_ signal: Int32) -> String {
        if let name = standard[Int(signal)] { return name }
        if signal == 34 { return "SIGRTMIN" }
        if signal > 34 && signal <= 64 { return "SIGRTMIN+\(signal - 34)" }
        return "signal \(signal)"
    }
}
