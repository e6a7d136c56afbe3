/// What one execution of the command under test showed.
public enum RunVerdict: String, Codable, Sendable, CaseIterable {
    /// The main thread burned CPU at or above the busy threshold for the sustained period.
    case frozen
    /// The main thread stayed idle for the whole window, or the command exited 0 without freezing.
    case good
    /// The command crashed, exited non-zero or was killed before either: never counted as fixed.
    case inconclusive
}

/// The measurements of one execution, as the runner (or a simulated predicate) reports them.
public struct BisectObservation: Sendable, Equatable {
    /// The classification of the run.
    public var verdict: RunVerdict
    /// The main thread's CPU use (cores) over the last measured period, when measured.
    public var mainThreadCPU: Double?
    /// Wall-clock seconds the run took, when measured.
    public var seconds: Double?
    /// Why the run ended: `exit 0`, `signal 11`, `frozen`, `window elapsed`...
    public var detail: String?

    /// Creates an observation; only the verdict is required.
    public init(_ verdict: RunVerdict, mainThreadCPU: Double? = nil, seconds: Double? = nil, detail: String? = nil) {
        self.verdict = verdict
        self.mainThreadCPU = mainThreadCPU
        self.seconds = seconds
        self.detail = detail
    }
}

/// Why a run was made.
public enum BisectPhase: String, Codable, Sendable {
    /// Calibration: everything enabled, then everything disabled.
    case calibrate
    /// The search for causes.
    case search
    /// Verification of the answer: fixes re-run, the all-enabled run re-checked.
    case verify
}

/// One execution of the command: the configuration (the flags disabled), why it ran and what it showed.
public struct BisectTrial: Codable, Sendable, Equatable {
    /// The flags disabled in this run (names, sorted in the order of `--flags`).
    public var disabled: [String]
    /// Why the run was made.
    public var phase: BisectPhase
    /// The run's classification.
    public var verdict: RunVerdict
    /// The main thread's CPU use over the last measured period, in cores.
    public var mainThreadCPU: Double?
    /// Wall-clock seconds.
    public var seconds: Double?
    /// Why the run ended.
    public var detail: String?

    /// Creates a trial record.
    public init(disabled: [String], phase: BisectPhase, observation: BisectObservation) {
        self.disabled = disabled
        self.phase = phase
        verdict = observation.verdict
        mainThreadCPU = observation.mainThreadCPU
        seconds = observation.seconds
        detail = observation.detail
    }

    /// The observation this trial recorded.
    public var observation: BisectObservation {
        BisectObservation(verdict, mainThreadCPU: mainThreadCPU, seconds: seconds, detail: detail)
    }
}

/// The overall answer of a bisection.
public enum BisectVerdict: String, Codable, Sendable, CaseIterable {
    /// Causes were found and verified (exit 0).
    case found
    /// No cause was found (exit 1).
    case none
    /// The runs contradict each other beyond what the measured flakiness explains (exit 1).
    case inconsistent
    /// With nothing disabled the command does not freeze (exit 3).
    case notReproducible = "not-reproducible"
    /// With everything disabled the command still freezes or does not run cleanly (exit 4).
    case notAttributable = "not-attributable"
    /// The freeze is too unreliable for a confident answer within the run budget (exit 5).
    case tooFlaky = "too-flaky"
}

/// A statement the bisection verified, reported as one JUnit test case.
public struct BisectClaim: Sendable, Equatable {
    /// A short sentence: "disabling autoscroll fixes the freeze".
    public var statement: String
    /// True when the verification runs agreed.
    public var passed: Bool
    /// Runs that support (or contradict) the statement.
    public var evidence: String
}
