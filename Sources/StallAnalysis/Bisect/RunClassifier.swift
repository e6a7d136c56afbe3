/// When a run is frozen, good or inconclusive. Every field documents its default.
public struct RunClassifierOptions: Sendable, Equatable {
    /// Main-thread use, as a fraction of one core, at or above which the main thread counts as busy. Use is
    /// CPU time plus the time spent runnable but waiting for a CPU, when the kernel reports it. Default: 0.9.
    public var busyThreshold = 0.9
    /// Main-thread CPU below which the main thread counts as idle. Default: 0.1.
    public var idleThreshold = 0.1
    /// How long the main thread must stay busy for the run to be frozen: its CPU use averaged over the last
    /// this many seconds reaches the busy threshold. The run is killed as soon as that is so. Default: 1 s.
    public var sustainedSeconds = 1.0
    /// Longest observation of one run (`--window`). A run still going at the end is good when its main thread
    /// was idle over the last `sustainedSeconds`, inconclusive otherwise. Default: 10 s.
    public var windowSeconds = 10.0
    /// Time between two measurements of the main thread's CPU time. Default: 0.1 s.
    public var intervalSeconds = 0.1

    /// Creates the default options.
    public init() {}

    /// Checks the values; throws ``AnalysisError/usage(_:)`` naming the first bad one.
    public func validate() throws {
        guard busyThreshold > 0, busyThreshold <= 1 else { throw AnalysisError.usage("the busy threshold must be in (0, 1]") }
        guard idleThreshold >= 0, idleThreshold < busyThreshold else {
            throw AnalysisError.usage("the idle threshold must be at least 0 and below the busy threshold")
        }
        guard intervalSeconds >= 0.01, sustainedSeconds >= intervalSeconds else {
            throw AnalysisError.usage("the sustained period must be at least one measurement interval (\(intervalSeconds) s)")
        }
        guard windowSeconds >= sustainedSeconds else {
            throw AnalysisError.usage("--window must be at least the sustained period (\(sustainedSeconds) s)")
        }
    }
}

/// Classifies one run from successive measurements of its main thread's CPU time. Pure: it sees numbers, not
/// processes, so tests feed it synthetic measurements.
public struct RunClassifier: Sendable {
    /// The options in use.
    public let options: RunClassifierOptions
    private var samples: [(seconds: Double, cpu: Double, runnable: Double)] = []

    /// Creates a classifier.
    public init(options: RunClassifierOptions) { self.options = options }

    /// Records that at `seconds` after the start the main thread had used `cpuSeconds` of CPU in total and
    /// had waited `waitSeconds` in total for a CPU while runnable (the run-queue wait of schedstat; 0 when
    /// unknown). Busy and idle are judged on CPU plus wait, so a spinning thread on a loaded machine, which
    /// gets less than a whole core, still counts as busy.
    /// Returns `.frozen` once the main thread has been busy for the sustained period, `.good` or
    /// `.inconclusive` once the window is over, nil while the run should go on.
    public mutating func record(seconds: Double, cpuSeconds: Double, waitSeconds: Double = 0) -> RunVerdict? {
        samples.append((seconds, cpuSeconds, cpuSeconds + waitSeconds))
        if let first = samples.first, seconds - first.seconds >= options.sustainedSeconds - 1e-9,
            let recent = recentUse(\.runnable), recent >= options.busyThreshold
        {
            return .frozen
        }
        guard seconds >= options.windowSeconds else { return nil }
        return (recentUse(\.runnable) ?? 1) < options.idleThreshold ? .good : .inconclusive
    }

    /// The verdict of a run that ended by itself: good after exit status 0, inconclusive otherwise (a crash, a
    /// failure or a signal). A freeze seen before the end has already been reported by ``record(seconds:cpuSeconds:)``.
    public func verdictAtExit(status: Int32?) -> RunVerdict { status == 0 ? .good : .inconclusive }

    /// The main thread's CPU use over the last sustained period (or what was measured of it), in cores.
    public func recentCPU() -> Double? { recentUse(\.cpu) }

    private func recentUse(_ measure: KeyPath<(seconds: Double, cpu: Double, runnable: Double), Double>) -> Double? {
        guard let last = samples.last else { return nil }
        guard let start = samples.last(where: { last.seconds - $0.seconds >= options.sustainedSeconds - 1e-9 })
            ?? samples.first, last.seconds > start.seconds
        else { return nil }
        return (last[keyPath: measure] - start[keyPath: measure]) / (last.seconds - start.seconds)
    }
}
