/// A capture file read into memory: the process, its images and its stalls with their samples.
public struct Capture: Sendable {
    /// Where the capture came from (a path, or a name given by the caller).
    public var source: String
    /// The process record; nil only for a file cut before its first record.
    public var process: ProcessRecord?
    /// Every image the file lists, in file order (an image listed twice appears once).
    public var images: [ImageRecord]
    /// Images copied from memory (the vDSO), in file order. Default: none (older writers copied none).
    public var imageContents: [ImageContentsRecord] = []
    /// Stalls in the order they began.
    public var stalls: [Stall]
    /// When and from which files the capture was symbolicated (`stallprof symbolicate`); nil when it was not.
    public var symbolication: SymbolicationRecord? = nil
    /// The symbols and source frames `stallprof symbolicate` wrote, by looked-up address (a return address less
    /// one). Default: none; analyzers then read the image files.
    public var symbols: [UInt64: EmbeddedSymbol] = [:]
    /// True when the watchdog stopped and closed the file; false after a crash or kill.
    public var closedCleanly: Bool
    /// The close record's time (monotonic nanoseconds); nil when the file has none. Default: nil.
    public var closedAtNs: UInt64? = nil
    /// Records the writer dropped because the file did not accept writes (disk full, file size limit), in file
    /// order. Default: none.
    public var drops: [DroppedRecord] = []
    /// The app's markers (`StallMarker`), by start time; intervals paired from their begin and end records.
    /// Default: none (captures written before markers existed have none).
    public var markers: [Marker] = []
    /// Markers the watchdog lost because the app marked faster than its rings were drained. Default: 0.
    public var droppedMarkers: UInt64 = 0
    /// ``droppedMarkers`` by the kernel tid of the thread that made them; tid 0 holds the losses of threads
    /// without a ring of their own and those of writers that did not count per thread. Default: none.
    public var droppedMarkersByThread: [Int32: UInt64] = [:]
    /// The capture's time origin (monotonic nanoseconds), which every relative time in reports, flame charts and
    /// exports counts from: the process record's start; without one (a file cut before it), the earliest stall or
    /// marker start; 0 for a capture with neither.
    public var originNs: UInt64 {
        if let process { return process.startMonotonicNs }
        let stallStart = stalls.lazy.map(\.begin.startNs).min()
        let markerStart = markers.lazy.map(\.startNs).min()
        return [stallStart, markerStart].compactMap { $0 }.min() ?? 0
    }
    /// Samples dropped in all, from ``drops``.
    public var droppedSamples: UInt64 { drops.reduce(0) { $0 &+ $1.sampleCount } }
    /// Problems the reader tolerated (a record cut by a kill at the end of the file).
    public var warnings: [String]

    /// Creates a capture.
    public init(
        source: String, process: ProcessRecord? = nil, images: [ImageRecord] = [], stalls: [Stall] = [],
        closedCleanly: Bool = false, warnings: [String] = []
    ) {
        (self.source, self.process, self.images, self.stalls) = (source, process, images, stalls)
        (self.closedCleanly, self.warnings) = (closedCleanly, warnings)
    }
}

/// One episode: a stall (the main queue stopped answering) or a saturated period (it answered, but its thread
/// never rested): what its thread did meanwhile, and how it ended.
public struct Stall: Sendable {
    /// The begin record.
    public var begin: StallBeginRecord
    /// The end record; nil when the process died or the file ends during the stall.
    public var end: StallEndRecord?
    /// The samples, in time order.
    public var samples: [Sample]
    /// What the thread waited for, when the watchdog looked (blocked episodes, version 2 captures).
    public var blockedOn: BlockedOnRecord?
    /// The thread's blocked-signal mask, when the watchdog looked (its sample requests went unanswered); nil when
    /// it did not, or in captures written before the record existed.
    public var signalMask: SignalMaskRecord?
    /// Every thread of the process, as the watchdog saw it during a blocked episode: snapshots and the CPU-only
    /// reading at its end, in file order (empty for other episodes and older captures).
    public var threads: [ThreadsRecord] = []

    /// Creates a stall.
    public init(
        begin: StallBeginRecord, end: StallEndRecord? = nil, samples: [Sample] = [], blockedOn: BlockedOnRecord? = nil,
        signalMask: SignalMaskRecord? = nil
    ) {
        (self.begin, self.end, self.samples, self.blockedOn) = (begin, end, samples, blockedOn)
        self.signalMask = signalMask
    }

    /// The episode number within its capture.
    public var id: UInt32 { begin.stallID }
    /// A stall or a saturated episode.
    public var kind: EpisodeKind { begin.kind }
    /// The watched target the episode belongs to: `main` for the main queue (``StallBeginRecord/mainTarget``).
    public var target: String { begin.target }
    /// The threshold its target was watched with (``StallBeginRecord/thresholdNs``), nanoseconds; nil when the
    /// record does not say (written before the field: for the main queue, the process record's).
    public var thresholdNs: UInt64? { begin.thresholdNs }
    /// False when the file ends before the stall did (the process was killed or crashed mid-stall).
    public var isFinished: Bool { end != nil }

    /// CPU time, run-queue wait and wall time over the measured part of the stall: from the end record, or for an
    /// unfinished stall from its first and last samples. Nil when nothing was measured.
    ///
    /// The last samples of an unfinished stall may find the thread waiting for a CPU (``SampleFlags/waitingForCPU``):
    /// schedstat credits that wait only when it ends, so their `runQueueNs` lacks it, and a busy thread killed while
    /// it waited on a loaded machine read "blocked". The time since the last sample that did not find it waiting
    /// counts as run-queue wait.
    private var measured: (cpu: UInt64, wait: UInt64, wall: UInt64)? {
        if let end, end.measuredNs > 0 { return (end.cpuNs, end.runQueueNs, end.measuredNs) }
        guard let first = samples.first, let last = samples.last, last.timestampNs > first.timestampNs else {
            return nil
        }
        let credited = samples.last { !$0.flags.contains(.waitingForCPU) } ?? first
        let pending = last.timestampNs &- min(last.timestampNs, max(credited.timestampNs, first.timestampNs))
        return (last.threadCPUNs &- min(first.threadCPUNs, last.threadCPUNs),
                (last.runQueueNs &- min(first.runQueueNs, last.runQueueNs)) &+ pending,
                last.timestampNs - first.timestampNs)
    }

    /// Thread CPU time over wall time while the stall was measured, in [0, 1]. Nil when nothing was measured.
    public var cpuRatio: Double? { measured.map { min(1, Double($0.cpu) / Double($0.wall)) } }

    /// Share of the measured time the thread ran or waited for a CPU (see ``StallState/classify(activeRatio:)``),
    /// in [0, 1]. Run-queue wait is credited by the kernel when a wait ends, so over a short window the raw sum
    /// can exceed the window (older captures hold such figures); it is capped at 1.
    public var activeRatio: Double? { measured.map { min(1, Double($0.cpu &+ $0.wait) / Double($0.wall)) } }

    /// Busy or blocked: the watchdog's classification, or for an unfinished stall the same rule applied to its
    /// samples. Nil when an unfinished stall has fewer than two samples.
    public var state: StallState? {
        if let end { return end.state }
        return activeRatio.map(StallState.classify(activeRatio:))
    }

    /// When the episode ended: its end record, else its last sample, else its detection; never before its start
    /// (start + duration + pause, for any numbers a file holds, without overflow).
    public var endNs: UInt64 { max(begin.startNs, end?.endNs ?? samples.last?.timestampNs ?? begin.detectedNs) }

    /// Duration in nanoseconds: to the end record, or to the last sample of an unfinished stall; time the process
    /// was stopped during it (``pausedNs``) is not counted.
    public var durationNs: UInt64 {
        let last = end?.endNs ?? samples.last?.timestampNs ?? begin.detectedNs
        let wall = last > begin.startNs ? last - begin.startNs : 0
        return wall - min(wall, pausedNs)
    }

    /// Time the whole process was stopped (SIGSTOP, a frozen cgroup) during the episode, nanoseconds.
    public var pausedNs: UInt64 { end?.pausedNs ?? 0 }

    /// The thread's run-queue wait over the stretches in which samples were missed (``StallEndRecord/missedRunQueueNs``):
    /// the wait for a CPU that cost them. Nil for an unfinished episode or a capture written before the field.
    public var missedRunQueueNs: UInt64? { end?.missedRunQueueNs }
}
