import StallFormat

/// What every exporter reads: episodes with their times and samples, the samples' stacks (``stacks``: each frame and
/// each stack stored once), markers, and the images the addresses came from. Built from a capture
/// (``TimelineBuilder/build(_:options:diagnostics:)``) or from folded stacks (``TimelineBuilder/build(folded:name:)``:
/// one episode without times). All times are nanoseconds from ``startNs`` (the capture's start), so exporters never
/// see the capture's monotonic clock.
public struct Timeline: Sendable {
    /// What the timeline is called (the capture's source, or the inputs' names).
    public var name: String
    /// Wall-clock time of ``startNs`` (nanoseconds since the Unix epoch); nil when unknown.
    public var startWallNs: UInt64?
    /// The span the timeline covers, nanoseconds from its start (the close record, or the last episode's end);
    /// nil when the input has no times.
    public var durationNs: UInt64?
    /// The sampling interval, nanoseconds; nil when unknown.
    public var sampleIntervalNs: UInt64?
    /// Path of the main executable (its image is the main binary); nil when unknown.
    public var executable: String?
    /// Episodes in the order they began.
    public var episodes: [TimelineEpisode]
    /// The frames and stacks the samples name (``TimelineSample/stack``).
    public var stacks: TimelineStacks
    /// Markers in time order (a capture's, all of them; none for folded input).
    public var markers: [TimelineMarker]
    /// Images the frames' addresses fall in, the main binary first when known.
    public var images: [ImageRecord]
    /// What a sample's ``TimelineSample/count`` measures (untimed input: the folded stacks' unit, e.g.
    /// nanoseconds for perf `cpu-clock` periods); nil means sample counts. Captures leave it nil.
    public var countUnit: CountUnit?
    /// Thread names by ``threadKey(pid:tid:)``, where the input names its threads (perf script's `comm`);
    /// exporters call a capture's sampled thread `main queue (tid N)`. Default: none.
    public var threadNames: [Int64: String] = [:]

    /// The key of thread `tid` of process `pid` in ``threadNames`` (a tid is reused by another process over time).
    public static func threadKey(pid: Int32, tid: Int32) -> Int64 { Int64(pid) << 32 | Int64(UInt32(bitPattern: tid)) }

    /// Creates a timeline.
    public init(name: String, isTimed: Bool, startWallNs: UInt64? = nil, durationNs: UInt64? = nil,
                sampleIntervalNs: UInt64? = nil, executable: String? = nil, episodes: [TimelineEpisode] = [],
                stacks: TimelineStacks = TimelineStacks(), markers: [TimelineMarker] = [], images: [ImageRecord] = [],
                countUnit: CountUnit? = nil) {
        self.name = name
        self.isTimed = isTimed
        self.startWallNs = startWallNs
        self.durationNs = durationNs
        self.sampleIntervalNs = sampleIntervalNs
        self.executable = executable
        self.episodes = episodes
        self.stacks = stacks
        self.markers = markers
        self.images = images
        self.countUnit = countUnit
    }

    /// True when the timeline comes from captures (episodes carry times); false for untimed input.
    public var isTimed: Bool

    /// Nanoseconds one count stands for when counts measure time; nil for sample or event counts.
    public var nanosecondsPerCount: Double? {
        if case .time(let scale)? = countUnit { return scale }
        return nil
    }

    /// What viewers call process `pid`: the name of its thread `pid` or of the first of its threads the input
    /// names (perf's `comm`), else the executable's file name (a capture's process), else the timeline's name.
    public func processName(pid: Int32) -> String {
        if let name = threadNames[Self.threadKey(pid: pid, tid: pid)] { return name }
        for episode in episodes where episode.pid == pid {
            if let tid = episode.tid, let name = threadNames[Self.threadKey(pid: pid, tid: tid)] { return name }
        }
        if let executable { return executable.split(separator: "/").last.map(String.init) ?? executable }
        return name
    }

    /// What viewers call thread `tid` of process `pid`: its name in the input (perf's `comm`: viewers show the tid
    /// beside it), else a capture's sampled thread by the targets it was sampled for, `main queue (tid 12)`,
    /// `loop-1 (tid 13)` (``watchedName(pid:tid:)``); `stacks (no timestamps)` for untimed input.
    public func threadName(pid: Int32, tid: Int32) -> String {
        guard isTimed else { return "stacks (no timestamps)" }
        return threadNames[Self.threadKey(pid: pid, tid: tid)] ?? "\(watchedName(pid: pid, tid: tid)) (tid \(tid))"
    }

    /// Number of samples in all episodes.
    public var sampleCount: Int { episodes.reduce(0) { $0 + $1.samples.count } }

    /// The frames of `sample`'s stack, root first.
    public func frames(of sample: TimelineSample) -> [TimelineFrame] { stacks.frames(of: sample.stack) }

    /// Adds `other`'s episodes, markers and images after this timeline's (a second capture exported with the first:
    /// its times count from its own start), and its name after this one's.
    public mutating func append(_ other: Timeline) {
        let nodes = stacks.add(other.stacks)
        name += ", " + other.name
        episodes += other.episodes.map { episode in
            var episode = episode
            for index in episode.samples.indices {
                episode.samples[index].stack = nodes[Int(episode.samples[index].stack)]
            }
            return episode
        }
        markers += other.markers
        images += other.images.filter { !images.contains($0) }
        threadNames.merge(other.threadNames) { first, _ in first }
        executable = executable ?? other.executable
        durationNs = max(durationNs ?? 0, other.durationNs ?? 0)
    }
}

/// One episode: a stall or a saturated period of a capture, or all the stacks of an untimed input.
public struct TimelineEpisode: Sendable {
    /// The episode number within its capture; 0 for untimed input.
    public var id: UInt32
    /// A stall or a saturated episode; nil for untimed input.
    public var kind: EpisodeKind?
    /// Busy or blocked; nil when unknown.
    public var state: StallState?
    /// Start, nanoseconds from the timeline's start; nil for untimed input.
    public var startNs: UInt64?
    /// Duration in nanoseconds; nil for untimed input.
    public var durationNs: UInt64?
    /// Process id of the captured process; nil when unknown.
    public var pid: Int32?
    /// Kernel thread id of the sampled thread; nil when unknown.
    public var tid: Int32?
    /// Thread CPU time over wall time, in [0, 1]; nil when not measured.
    public var cpuRatio: Double?
    /// One sentence on what a blocked episode waited for; nil when not known.
    public var blockedOn: String?
    /// Samples in time order (untimed input: one entry per distinct stack, in byte order).
    public var samples: [TimelineSample]
    /// The watched target of a capture's episode (``Stall/target``: `main` for the main queue); nil for other
    /// input. Default: nil.
    public var target: String? = nil
    /// What viewers call the episode when it is not a capture's: a perf thread's `comm (tid N)`. Default: nil.
    public var label: String? = nil
    /// The input the episode comes from (a capture's or a perf text's path); nil for untimed input. Default: nil.
    public var source: String? = nil

    /// Creates an episode.
    public init(id: UInt32, kind: EpisodeKind? = nil, state: StallState? = nil, startNs: UInt64? = nil,
                durationNs: UInt64? = nil, pid: Int32? = nil, tid: Int32? = nil, cpuRatio: Double? = nil, blockedOn: String? = nil,
                samples: [TimelineSample] = []) {
        self.id = id
        self.kind = kind
        self.state = state
        self.startNs = startNs
        self.durationNs = durationNs
        self.pid = pid
        self.tid = tid
        self.cpuRatio = cpuRatio
        self.blockedOn = blockedOn
        self.samples = samples
    }

    /// How viewers name the episode: its ``label`` when it has one, else `busy stall`, `blocked stall`,
    /// `saturated`, or `stall` when its state is unknown; `profile` for untimed input.
    public var title: String {
        if let label { return label }
        switch kind {
        case nil: return "profile"
        case .saturated?: return "saturated"
        case .stall?: return state.map { "\($0) stall" } ?? "stall"
        }
    }
}

/// One sample (or, for untimed input, one distinct stack with its count).
public struct TimelineSample: Sendable {
    /// When it was taken, nanoseconds from the timeline's start; nil for untimed input.
    public var timestampNs: UInt64?
    /// Wall time the sample stands for, nanoseconds (a capture's: the gap to the next sample of its episode; perf
    /// text's: its period, or the gap to its thread's next sample; docs/EXPORT.md); nil when untimed.
    public var wallNs: UInt64?
    /// How many samples this entry counts (1 for a capture's sample; the folded count otherwise).
    public var count: Double
    /// ``count`` exactly, when it is an integer of folded input (up to 2^64-1, past a Double's 2^53); nil otherwise.
    public var exact: UInt64?
    /// The stack: its leaf node in the timeline's ``Timeline/stacks`` (0: no frames). ``Timeline/frames(of:)``
    /// spells it out.
    public var stack: Int32

    /// Creates a sample of the stack ending at node `stack`.
    public init(timestampNs: UInt64? = nil, wallNs: UInt64? = nil, count: Double = 1, exact: UInt64? = nil,
                stack: Int32) {
        self.timestampNs = timestampNs
        self.wallNs = wallNs
        self.count = count
        self.exact = exact
        self.stack = stack
    }
}

/// One frame of a sample.
public struct TimelineFrame: Sendable, Hashable {
    /// The symbolized name (as `stallprof fold` prints it).
    public var name: String
    /// Path of the image the address falls in; nil when unknown.
    public var image: String?
    /// The instruction address looked up (for return addresses, the byte before); nil when unknown.
    public var address: UInt64?
    /// Source line; nil when unknown (speedscope input gives them; captures with `--lines`, from DWARF).
    public var line: Int?
    /// Source file; nil when unknown (as ``line``).
    public var file: String?
    /// Captures: where in the source the address was, from DWARF (the line in the frame's function, the functions
    /// inlined there); nil when unknown. pprof writes it as the location's lines.
    public var place: SourcePlace?

    /// Creates a frame.
    public init(
        name: String, image: String? = nil, address: UInt64? = nil, line: Int? = nil, file: String? = nil,
        place: SourcePlace? = nil
    ) {
        self.name = name
        self.image = image
        self.address = address
        self.line = line
        self.file = file
        self.place = place
    }
}

/// A point or a span in time that the app marked.
public struct TimelineMarker: Sendable {
    /// An instant or an interval.
    public enum Extent: Sendable, Equatable {
        /// A point in time.
        case instant
        /// A span lasting this many nanoseconds.
        case interval(durationNs: UInt64)
    }

    /// The marker's name.
    public var name: String
    /// Instant or interval.
    public var extent: Extent
    /// Start, nanoseconds from the timeline's start.
    public var startNs: UInt64
    /// Process id of the process that set it; nil when unknown.
    public var pid: Int32?
    /// Kernel thread id of the thread that set it; nil when unknown.
    public var tid: Int32?

    /// Creates a marker.
    public init(name: String, extent: Extent, startNs: UInt64, pid: Int32? = nil, tid: Int32? = nil) {
        self.name = name
        self.extent = extent
        self.startNs = startNs
        self.pid = pid
        self.tid = tid
    }
}
