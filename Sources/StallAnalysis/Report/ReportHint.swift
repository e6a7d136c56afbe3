import StallFormat

/// One plain-language hint about an episode, a group or a profile: what kind it is (stable, for programs) and the
/// sentence the text prints after `hint: `.
public struct ReportHint: Sendable, Equatable {
    /// `recursion`, `run-loop-reentry`, `no-app-code`, `truncated` or `signal-blocked` (docs/REPORT.md, "Hints").
    public var kind: String
    /// The sentence, e.g. "the thread blocks SIGPROF: no stacks".
    public var text: String
    /// `no-app-code` hints: the module the time went to, neither the app's nor the system's (e.g. `ChatUI`); nil
    /// when it went to system code, or for other kinds.
    public var module: String?

    /// Creates a hint.
    public init(kind: String, text: String, module: String? = nil) {
        self.kind = kind
        self.text = text
        self.module = module
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

/// What a profile's hints are worded from, gathered by ``ProfileBuilder``.
struct HintFacts {
    /// The episode's kind and state; `kind` nil: a profile that is not a capture's.
    var kind: EpisodeKind?
    var state: StallState?
    /// What the weight is called: `samples`, `the time`, `cycles`.
    var weightName: String
    var total: Double
    /// The most common cycle of app frames (root first, its first frame repeated last) and its weight.
    var cycle: (frames: [String], weight: Double)?
    /// The weight of every sample with a cycle.
    var cycleWeight: Double
    /// The outermost app frame with the most weight.
    var outermost: (frame: String, weight: Double)?
    /// The share of samples without app code.
    var noApp: Double
    /// ``ProfileBuilder/appModules``.
    var appModules: [String]?
    /// The library module samples without app code spent the most in, and its heaviest function.
    var library: LibraryTally.Heaviest?
    /// The weight of samples cut at the frame limit.
    var truncated: Double
}

extension ReportHint {
    /// The hints of a profile, in order: recursion, a pass re-entered from the run loop, no app code, truncated
    /// stacks (docs/REPORT.md, "Hints").
    static func profileHints(_ facts: HintFacts) -> [ReportHint] {
        let short = { (name: String) in ReportFormat.fit(name, width: 60) }
        let (total, weightName) = (facts.total, facts.weightName)
        let counted = weightName == "samples"
        var hints: [ReportHint] = []
        if let (cycle, count) = facts.cycle, facts.cycleWeight / total >= ProfileBuilder.loopShare {
            let share = ReportFormat.percentSpaced(facts.cycleWeight / total)
            if cycle.count == 2 {
                hints.append(ReportHint(kind: "recursion", text: "recursion: \(short(cycle[0])) calls itself (in \(share) of \(weightName))"))
            } else {
                let this = counted ? "\(ProfileBuilder.whole(count)) samples" : ReportFormat.percentSpaced(count / total)
                hints.append(ReportHint(kind: "recursion", text: "recursion: the same \(facts.kind == nil ? "" : "app ")frames "
                    + "keep cycling on the stack (in \(share) of \(weightName); \(this) show this cycle): "
                    + cycle.map(short).joined(separator: " -> ")))
            }
        }
        if facts.kind == .saturated, let (frame, count) = facts.outermost, count / total >= ProfileBuilder.loopShare {
            hints.append(ReportHint(kind: "run-loop-reentry", text: "loop across run-loop turns: the run loop keeps "
                + "re-entering \(short(frame)) (the outermost app frame in "
                + "\(ReportFormat.percentSpaced(count / total)) of samples); find what schedules it again"))
        }
        if facts.kind != nil, facts.noApp >= ProfileBuilder.frameworkShare { hints.append(noAppCode(facts)) }
        if facts.truncated > 0 {
            let what = counted ? "\(ProfileBuilder.whole(facts.truncated)) of \(ProfileBuilder.whole(total)) samples"
                : "\(ReportFormat.percentSpaced(facts.truncated / total)) of \(weightName)"
            hints.append(ReportHint(kind: "truncated", text: "\(what) \(TruncatedStack.rootFrame): deeper than the "
                + "capture's frame limit, their outermost frames are missing"))
        }
        return hints
    }

    /// "no app code on the stack in 97 % of samples: the loop is in framework code; bisect the components"; when
    /// the app's modules are known and the time went to a library module: "no frame of MyApp on the stack in 100 %
    /// of samples; the loop is in ChatUI (ChatUI.Window.layoutPass() -> () re-enters from the run loop); bisect its
    /// components", naming the module's heaviest function.
    static func noAppCode(_ facts: HintFacts) -> ReportHint {
        let percent = ReportFormat.percentSpaced(facts.noApp)
        let blocked = facts.state == .blocked
        guard let library = facts.library, let app = facts.appModules, !app.isEmpty else {
            let what = blocked ? "the wait is in framework code" : "the loop is in framework code; bisect the components"
            return ReportHint(kind: "no-app-code", text: "no app code on the stack in \(percent) of samples: \(what)")
        }
        let function = ReportFormat.fit(library.function, width: 60)
        let onStack = "\(function) on the stack in \(ReportFormat.percentSpaced(library.weight / facts.total)) of samples"
        let what = blocked ? "the wait is in \(library.module) (\(onStack))"
            : facts.kind == .saturated
            ? "the loop is in \(library.module) (\(function) re-enters from the run loop); bisect its components"
            : "the loop is in \(library.module) (\(onStack)); bisect its components"
        return ReportHint(
            kind: "no-app-code", text: "no frame of \(app.joined(separator: " or ")) on the stack in \(percent) of samples; \(what)",
            module: library.module)
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
