import StallFormat

/// A function's share of an episode's (or a group's) analyzed samples.
public struct FunctionShare: Equatable, Sendable {
    /// The demangled name, as `stallprof fold` prints it.
    public var function: String
    /// Samples counted for it (as the leaf for self shares; anywhere on the stack, once per sample, for totals).
    public var samples: Int
    /// `samples` over the analyzed samples, in [0, 1].
    public var share: Double
    /// Its weight: equal to `samples` for captures; in a profile report (``ProfileReport``), its count in the
    /// profile's unit (samples, nanoseconds, cycles...), which may be fractional or beyond Int.
    public var count: Double
    /// Captures: the function's Swift module (`MyApp`, `ChatUI`); nil for C code, system code, helpers, and in a
    /// profile report.
    public var module: String? = nil
    /// Captures: where in its source most of its samples were (as the leaf, for self shares); nil when its image
    /// has no DWARF, and in a profile report.
    public var place: SourcePlace? = nil
}

/// One capture read by the report.
public struct CaptureSummary: Sendable {
    /// The path given (or `-`).
    public var path: String
    /// The process record; nil only for a file cut before its first record.
    public var process: ProcessRecord?
    /// True when the watchdog closed the file.
    public var closedCleanly: Bool
    /// Recorded time: from the process record's start to the close record, or to the last time the file
    /// mentions (a killed process). Nanoseconds; 0 without a process record.
    public var recordedNs: UInt64
    /// App markers the watchdog lost, by the tid of the thread that made them (tid 0: threads without a ring of
    /// their own, or a writer that did not count per thread), most first (ties: lower tid first).
    public var markersLost: [(tid: Int32, count: UInt64)] = []
    /// The Swift modules that are the app's code (``StallReportOptions/appModules``, or the ones found in the
    /// executable), sorted; nil when every module counts as the app's.
    public var appModules: [String]? = nil
    /// When and from which files `stallprof symbolicate` resolved the capture; nil when it did not.
    public var symbolication: SymbolicationRecord? = nil
}

/// What a blocked episode waited for, resolved for reading (see ``BlockedOnRecord``).
public struct BlockedOnSummary: Sendable, Equatable {
    /// What kind of wait (docs/REPORT.md): `mutex`, `dispatch-sync`, `semaphore`, `group`, `condition`, `join`,
    /// `rwlock`, `io`, `sleep`, `futex` (a futex wait nothing names), `syscall` or `unknown`.
    public var kind: String
    /// The system call's name (`futex`, `read`...), `syscall N` for one the table does not know; nil when the
    /// thread was not in one.
    public var syscall: String?
    /// The system call's number; nil when the thread was not in one.
    public var syscallNumber: Int?
    /// The call's first argument (futex address, file descriptor).
    public var argument: UInt64
    /// The watchdog's free-text detail (e.g. `read fd 5 (pipe:[1234])`); empty when none.
    public var detail: String
    /// Known owner: its kernel tid (the mutex's holder,
    /// the thread running the queue's block, the joined thread, the writer); nil otherwise.
    public var ownerTid: Int?
    /// Known owner: its thread name; empty when unknown.
    public var ownerName: String
    /// Known owner: its /proc state letter (`R`, `S`, `D`); nil when unknown.
    public var ownerState: String?
    /// Known owner: the system call it slept in; nil when it ran or is unknown.
    public var ownerSyscall: String?
    /// Known owner: its stack, root first (empty when it could not be taken).
    public var ownerStack: [String]
    /// Where each frame of ``ownerStack`` was in the source (``Symbolizer/rootFirstPlaces(leafFirst:)``); empty
    /// when none is known.
    public var ownerStackPlaces: [SourcePlace?] = []
    /// Known owner: its leaf-most app frame, or its leaf when none is app code; nil without a
    /// stack.
    public var ownerFrame: String?
    /// How the owner's stack was taken: `signal`, `stack memory`, or nil.
    public var ownerStackSource: String?
    /// True when the owner's stack was deeper than the buffer (outermost frames missing).
    public var ownerStackTruncated: Bool
    /// `dispatch-sync`: the queue's label (empty when the watchdog could not read it).
    public var queueLabel: String = ""
    /// The thread waited for (`certain`), or ranked candidates that may end the wait.
    public var waitsFor: [WaitedThread] = []
    /// The deadlock the wait is part of, each thread waiting for the next and the last for the first; empty when
    /// none was found.
    public var deadlock: [DeadlockLink] = []
    /// Every thread of the first snapshot, those that matter first (see ``ThreadSummary/why``).
    public var threads: [ThreadSummary] = []
    /// Threads the process had at the first snapshot (more than `threads.count` when some were left out).
    public var threadsTotal: Int = 0
    /// Whether any other thread ran during the episode (used CPU between its first and last readings, or was
    /// running at a snapshot); nil when the capture cannot tell (fewer than two readings).
    public var othersRan: Bool? = nil
}

/// Where one episode's (or one group's) samples were.
public struct SampleProfile: Sendable {
    /// Samples with frames that passed the selection (the denominator of every share).
    public var analyzedSamples: Int
    /// The stack with the most samples, root first (ties: the byte-smallest); empty without samples.
    public var heaviestStack: [String]
    /// Samples with exactly the heaviest stack.
    public var heaviestStackSamples: Int
    /// Leaf functions by self share, descending (ties by name).
    public var topSelf: [FunctionShare]
    /// App functions (see ``AppCodeRule``) by total share, descending, each at least 1 %.
    public var appFrames: [FunctionShare]
    /// App functions nearest the leaf: for each sample, the leaf-most app frame (where the app's own code was,
    /// itself or in the library code it called), by share, descending, each at least 1 %.
    public var appSelf: [FunctionShare]
    /// Share of the analyzed samples with no app code beyond entry points, in [0, 1].
    public var noAppCodeShare: Double
    /// Plain-language hints: loops, recursion, framework-only stacks, truncated stacks; for an episode (and its
    /// group) whose thread blocks the capture signal, that first.
    public var hints: [ReportHint]
    /// The analyzed weight: `analyzedSamples` for captures; a profile report's total in its unit.
    public var total: Double
    /// The heaviest stack's weight: `heaviestStackSamples` for captures.
    public var heaviestStackCount: Double
    /// Captures: where in its source each frame of the heaviest stack was (most of its samples), root first; nil
    /// for a frame without a line; empty when none is known (no DWARF, a profile report).
    public var heaviestStackPlaces: [SourcePlace?] = []
}

/// One episode (stall or saturated period) of one capture.
public struct EpisodeSummary: Sendable {
    /// Index of its capture in ``StallReport/captures``.
    public var capture: Int
    /// The episode's number within its capture.
    public var id: UInt32
    /// Stall or saturated.
    public var kind: EpisodeKind
    /// Busy or blocked; nil for an unfinished episode with fewer than two samples.
    public var state: StallState?
    /// The watched target it belongs to (``Stall/target``): `main` for the main queue.
    public var target: String = StallBeginRecord.mainTarget
    /// The threshold its target was watched with, milliseconds: the episode's own (``Stall/thresholdNs``), else
    /// for the main queue the capture's; nil when neither is known (another target's, in a record written before
    /// the field).
    public var thresholdMs: Double? = nil
    /// Start, milliseconds after the capture's start.
    public var startMs: Double
    /// Start, wall clock (nanoseconds since the Unix epoch); nil without a process record, or when the sum would
    /// not fit 64 bits (a corrupt capture).
    public var startWallNs: UInt64?
    /// Duration in milliseconds (to the last sample when unfinished).
    public var durationMs: Double
    /// True when the file ends during the episode.
    public var unfinished: Bool
    /// Thread CPU time over wall time, clamped to [0, 1]; nil when nothing was measured.
    public var cpuRatio: Double?
    /// (CPU + run-queue wait) over wall time, clamped to [0, 1]; nil when nothing was measured.
    public var activeRatio: Double?
    /// Samples recorded (repeated ones included).
    public var samples: Int
    /// Samples the thread did not answer in time (0 when unfinished: unknown).
    public var missedSamples: Int
    /// Time the process was stopped (SIGSTOP, a frozen cgroup) during the episode, milliseconds; not part of
    /// ``durationMs``.
    public var pausedMs: Double = 0
    /// The thread's wait for a CPU over the stretches in which samples were missed (the wait that cost them),
    /// milliseconds; nil when unknown (an unfinished episode, or a capture whose writer did not record it).
    public var runQueueWaitMs: Double? = nil
    /// The sampled thread's kernel tid.
    public var tid: Int32
    /// Where its samples were.
    public var profile: SampleProfile
    /// What it waited for; nil when the capture says nothing.
    public var blockedOn: BlockedOnSummary?
    /// Index of its group in ``StallReport/groups``.
    public var group: Int
    /// The app's markers within a second of the episode (``StallReport/markerMarginNs``), by start time.
    public var markers: [MarkerSummary] = []
    /// How its stacks read from memory came out; nil when none was.
    public var memoryStacks: MemoryStackCounts? = nil
    /// The queued blocks its samples saw run; nil when fewer than two samples knew their block.
    public var queueTurns: QueueTurns? = nil
    /// Samples per second it got (``Stall/samplesPerSecond``: the watchdog's figure; for older captures the same
    /// from the end record's count and span, or from the samples of an unfinished episode); nil without a span.
    public var samplesPerSecond: Double? = nil
    /// Samples per second asked: one over the capture's sample interval; nil without a process record.
    public var askedSamplesPerSecond: Double? = nil
    /// The watchdog's figure with the tick it measured and what held the rate back; nil for an unfinished
    /// episode and in captures written before it.
    public var sampleRate: EpisodeSampleRate? = nil
}

/// Episodes with the same fingerprint: one target, one kind, one state and the same heaviest-stack shape.
public struct EpisodeGroup: Sendable {
    /// The watched target of every episode of the group (groups never mix targets).
    public var target: String
    /// What the episodes share: the heaviest stack's app frames (root first, ` > `-joined), or its three
    /// leaf-most frames when it has no app code; prefixed by kind and state, followed by what a blocked
    /// episode waited for (kind, system call, the owner's frame).
    public var fingerprint: String
    /// Indexes into ``StallReport/episodes``, in order.
    public var episodes: [Int]
    /// The samples of every episode of the group, analyzed together.
    public var profile: SampleProfile
}

/// Figures over every selected episode.
public struct ReportSummary: Sendable {
    /// Selected episodes of kind stall.
    public var stalls: Int
    /// Selected saturated episodes.
    public var saturated: Int
    /// Busy and blocked episodes.
    public var busy: Int, blocked: Int
    /// Nearest-rank percentiles and maximum of the durations, milliseconds; nil without episodes.
    public var p50Ms: Double?, p90Ms: Double?, maxMs: Double?
    /// Sum of the durations, milliseconds.
    public var totalMs: Double
    /// Recorded time of every capture together, seconds.
    public var recordedSeconds: Double
    /// Hang rate: frozen seconds (every selected episode) per hour of recorded time; nil when nothing was
    /// recorded.
    public var stallSecondsPerHour: Double?
}
