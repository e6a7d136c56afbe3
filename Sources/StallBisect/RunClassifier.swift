import StallFormat

/// When a run is frozen, good or inconclusive. Every field documents its default.
public struct RunClassifierOptions: Sendable, Equatable {
    /// Main-thread use, as a fraction of one core, at or above which the main thread counts as busy. Use is CPU
    /// time per second of the time the thread did not spend waiting for a CPU (runnable but not running, when the
    /// kernel reports it): a spinning thread reads 1 however loaded the machine. Default: 0.9.
    public var busyThreshold = 0.9
    /// Main-thread CPU below which the main thread counts as idle. Default: 0.1.
    public var idleThreshold = 0.1
    /// How long the main thread must stay busy for the run to be frozen: its CPU use averaged over the last
    /// this many seconds reaches the busy threshold. The run is killed as soon as that is so. Default: 1 s.
    public var sustainedSeconds = 1.0
    /// Longest observation of one run (`--window`). A run still going at the end is good when its main thread
    /// was idle over the last `sustainedSeconds`, inconclusive otherwise. Time the app's main thread spent
    /// waiting for a CPU (runnable but not running: a loaded machine) does not count, up to ``windowStretch``:
    /// the app gets the window's worth of the time it could use, as on a quiet machine. Default: 10 s.
    public var windowSeconds = 10.0
    /// Most wall time of a window, as a multiple of ``windowSeconds``, however long the main thread waited for a
    /// CPU. With eight CPU hogs on two cores (load 10-18) a debug chat-freeze streamed its reply for 4.6 s
    /// before it froze, so a 5 s window ended before the freeze had lasted `--sustain`, with no stall in
    /// progress yet: "good". With four windows, its freeze (0.4 s of CPU to stream, then `--sustain` of CPU
    /// spinning) did not fit in 2 of 3 runs where the thread got 5-7 % of a core (load 15 with other builds).
    /// Default: 10.
    public var windowStretch = 10.0
    /// Voluntary context switches per second (sleeps: waits in a syscall) at or above which a busy main thread
    /// is slow but healthy rather than frozen: a frozen main thread spins and never sleeps, one doing periodic
    /// work sleeps between bursts, however little CPU a loaded machine gives it. Judged over the sustained
    /// period, only when the switch count is known. Default: 5.
    public var sleepsPerSecond = 5.0
    /// Time between two measurements of the main thread's CPU time. Default: 0.1 s.
    public var intervalSeconds = 0.1
    /// Where the measurements come from. Default: `.cpu`.
    public var measure = Measure.cpu
    /// With `.watchdog`: the watched targets whose episodes count (``Stall/target``: `main` for the main queue,
    /// others as the app named them). Default: empty, every target.
    public var targets: Set<String> = []

    /// Where a run's measurements come from.
    public enum Measure: String, Sendable, CaseIterable {
        /// The CPU counters of the process's first thread (tid == pid) in /proc. Works with any app whose main
        /// queue runs on its first thread (`RunLoop.main`, or no run loop at all).
        case cpu
        /// The stall file of the app's own ``StallWatchdog`` (the app must link StallProfiler and call
        /// `StallWatchdog.startFromEnvironment()`): `STALLPROF_OUTPUT` is set for each run, and the run is frozen
        /// when a busy stall has lasted the sustained period. It follows whichever thread services the main
        /// queue, also with `dispatchMain()` or an async main, where the first thread only waits.
        case watchdog
    }

    /// Creates the default options.
    public init() {}

    /// Checks the values; throws ``StallError/usage(_:)`` naming the first bad one.
    public func validate() throws {
        guard busyThreshold > 0, busyThreshold <= 1 else { throw StallError.usage("the busy threshold must be in (0, 1]") }
        guard idleThreshold >= 0, idleThreshold < busyThreshold else {
            throw StallError.usage("the idle threshold must be at least 0 and below the busy threshold")
        }
        guard sleepsPerSecond > 0 else { throw StallError.usage("the sleeps per second must be above 0") }
        guard intervalSeconds >= 0.01, sustainedSeconds >= intervalSeconds else {
            throw StallError.usage("the sustained period must be at least one measurement interval (\(intervalSeconds) s)")
        }
        guard windowSeconds >= sustainedSeconds else {
            throw StallError.usage("--window must be at least the sustained period (\(sustainedSeconds) s)")
        }
        guard windowStretch >= 1 else { throw StallError.usage("the window stretch must be at least 1") }
        guard targets.isEmpty || measure == .watchdog else {
            throw StallError.usage("--target needs --measure watchdog (targets are the watchdog's)")
        }
    }
}

/// Classifies one run from successive measurements of its main thread's CPU time. Pure: it sees numbers, not
/// processes, so tests feed it synthetic measurements.
public struct RunClassifier: Sendable {
    /// The options in use.
    public let options: RunClassifierOptions
    private var samples: [Sample] = []
    private var watchdogCPU: Double?

    /// Creates a classifier.
    public init(options: RunClassifierOptions) { self.options = options }

    /// Records that at `seconds` after the start the main thread had used `cpuSeconds` of CPU in total and
    /// had waited `waitSeconds` in total for a CPU while runnable (the run-queue wait of schedstat; 0 when
    /// unknown), and had slept voluntarily `voluntarySwitches` times in total (`voluntary_ctxt_switches` of its
    /// /proc status; nil when unknown). Time spent waiting for a CPU does not count: the sustained period and
    /// the use are measured in the time the thread was not waiting (running or sleeping), as if the machine were
    /// quiet. So a spinning thread on a loaded machine, which gets a small part of a core, is busy (use 1), and a
    /// slow but healthy one is judged on the work it did, not on how long a loaded machine made it take (with eight
    /// CPU hogs on two cores chat-freeze's healthy streaming, 0.4 s of CPU in 3 ms turns, never slept for 8 s: its
    /// timer was always due). A busy thread that slept at least `sleepsPerSecond` times a second of that time is
    /// working, not frozen.
    /// Returns `.frozen` once the main thread has been busy without sleeping for the sustained period, `.good`
    /// or `.inconclusive` once the window is over, nil while the run should go on.
    public mutating func record(
        seconds: Double, cpuSeconds: Double, waitSeconds: Double = 0, voluntarySwitches: Int? = nil
    ) -> RunVerdict? {
        // schedstat credits a wait when it ends: the counted time never goes back.
        let counted = max(seconds - max(waitSeconds, 0), samples.last?.counted ?? 0)
        samples.append(Sample(seconds: seconds, counted: counted, cpu: cpuSeconds, sleeps: voluntarySwitches.map(Double.init)))
        if let first = samples.first, counted - first.counted >= options.sustainedSeconds - 1e-9,
            let recent = recentUse(), recent >= options.busyThreshold,
            (recentSleeps() ?? 0) < options.sleepsPerSecond
        {
            return .frozen
        }
        guard windowIsOver(seconds: seconds, waitSeconds: waitSeconds) else { return nil }
        return (recentUse() ?? 1) < options.idleThreshold ? .good : .inconclusive
    }

    /// True once the window is over at `seconds` after the start, for a main thread that has waited
    /// `waitSeconds` in all for a CPU: `windowSeconds` of the time not spent waiting have passed, or
    /// `windowStretch` windows of wall time.
    public func windowIsOver(seconds: Double, waitSeconds: Double) -> Bool {
        let counted = seconds - min(max(waitSeconds, 0), seconds * (1 - 1 / options.windowStretch))
        return counted >= options.windowSeconds - 1e-9
    }

    /// The verdict of a run that ended by itself: good after exit status 0, inconclusive otherwise (a crash, a
    /// failure or a signal). A freeze seen before the end has already been reported by ``record(seconds:cpuSeconds:)``.
    public func verdictAtExit(status: Int32?) -> RunVerdict { status == 0 ? .good : .inconclusive }

    /// The main thread's CPU use per second of wall time over the last sustained period (or what was measured of
    /// it), in cores. With `.watchdog`, the CPU ratio of the stall in progress.
    public func recentCPU() -> Double? {
        guard options.measure == .cpu else { return watchdogCPU }
        guard let (start, last) = recentSpan(), last.seconds > start.seconds else { return nil }
        return (last.cpu - start.cpu) / (last.seconds - start.seconds)
    }

    /// Voluntary switches per second of time not spent waiting for a CPU over the last sustained period; nil
    /// when unknown.
    public func recentSleeps() -> Double? {
        guard let (start, last) = recentSpan(), let first = start.sleeps, let now = last.sleeps,
            last.counted > start.counted
        else { return nil }
        return (now - first) / (last.counted - start.counted)
    }

    /// CPU time per second of time not spent waiting for a CPU over the last sustained period, at most 1; nil
    /// when no such time passed (a thread that only waited).
    private func recentUse() -> Double? {
        guard let (start, last) = recentSpan(), last.counted > start.counted else { return nil }
        return min(1, (last.cpu - start.cpu) / (last.counted - start.counted))
    }

    /// The first and last measurement of the last sustained period of counted time (or what was measured of it).
    private func recentSpan() -> (Sample, Sample)? {
        guard let last = samples.last else { return nil }
        guard let start = samples.last(where: { last.counted - $0.counted >= options.sustainedSeconds - 1e-9 })
            ?? samples.first, last.seconds > start.seconds
        else { return nil }
        return (start, last)
    }

    /// One measurement: totals since the start of the thread.
    private struct Sample: Sendable {
        var seconds: Double
        /// Seconds not spent waiting for a CPU since the start.
        var counted: Double
        var cpu: Double
        var sleeps: Double?
    }

    /// Records what the app's watchdog capture showed at `seconds` after the start: nil when there is no
    /// capture (yet); otherwise its episodes of the targets ``RunClassifierOptions/targets`` keeps (each target's
    /// last episode is in progress when it has no end record yet). `waitSeconds` is how long the thread servicing
    /// the main queue has waited for a CPU in all (0 when unknown): it stretches the window
    /// (``RunClassifierOptions/windowSeconds``).
    /// Returns `.frozen` once a busy stall in progress, or a saturated episode in progress (the target answers
    /// but its thread never sleeps; busy by definition), has lasted the sustained period (wall time: the watchdog
    /// counts a wait for a CPU as stall time, and apps that stall for a set time, such as the samples, stall as long
    /// on a loaded machine); at the end of the window, `.good` when no episode is in progress, `.inconclusive`
    /// when one is (a window that ends while a watched thread is stalled or saturated is never good) or when
    /// there is no capture.
    public mutating func record(seconds: Double, capture: Capture?, waitSeconds: Double = 0) -> RunVerdict? {
        let inProgress = capture.map(episodesInProgress) ?? []
        samples.append(Sample(seconds: seconds, counted: seconds, cpu: 0, sleeps: nil))
        let frozen = inProgress.first { stall in
            (stall.kind == .saturated || stall.state == .busy)
                && Double(stall.durationNs) / 1e9 >= options.sustainedSeconds - 1e-9
        }
        // The CPU ratio shown: the frozen episode's, else the longest one's in progress.
        watchdogCPU = (frozen ?? inProgress.max { $0.durationNs < $1.durationNs })?.cpuRatio
        if frozen != nil { return .frozen }
        guard windowIsOver(seconds: seconds, waitSeconds: waitSeconds) else { return nil }
        return capture != nil && inProgress.isEmpty ? .good : .inconclusive
    }

    /// The episodes of `capture` in progress, of the targets the options keep: each target's last episode when
    /// it has no end record, in capture order.
    func episodesInProgress(_ capture: Capture) -> [Stall] {
        var last: [String: Int] = [:]
        for (index, stall) in capture.stalls.enumerated()
        where options.targets.isEmpty || options.targets.contains(stall.target) {
            last[stall.target] = index
        }
        return last.values.sorted().map { capture.stalls[$0] }.filter { !$0.isFinished }
    }
}
