/// The records a stallprof capture file holds, in the order a watchdog writes them.
///
/// A capture is a header followed by framed records (see docs/FORMAT.md for the byte grammar). Every record is
/// self-contained, so a file cut short by a crash still reads up to its last complete record.

/// Facts about the captured process, written first.
public struct ProcessRecord: Sendable, Equatable {
    /// Process id of the captured process.
    public var pid: Int32
    /// CLOCK_MONOTONIC (nanoseconds) when the watchdog started; all other times in the file use this clock.
    public var startMonotonicNs: UInt64
    /// Wall-clock time (nanoseconds since the Unix epoch) at the same moment, to place the capture in time.
    public var startWallNs: UInt64
    /// Stall threshold the watchdog used, in nanoseconds.
    public var thresholdNs: UInt64
    /// Sampling interval during a stall, in nanoseconds.
    public var sampleIntervalNs: UInt64
    /// Path of the executable.
    public var executable: String

    /// Creates a process record.
    public init(
        pid: Int32, startMonotonicNs: UInt64, startWallNs: UInt64, thresholdNs: UInt64, sampleIntervalNs: UInt64,
        executable: String
    ) {
        self.pid = pid
        self.startMonotonicNs = startMonotonicNs
        self.startWallNs = startWallNs
        self.thresholdNs = thresholdNs
        self.sampleIntervalNs = sampleIntervalNs
        self.executable = executable
    }
}

/// One loaded image (executable or shared library), so that addresses can be resolved later from the file alone.
public struct ImageRecord: Sendable, Equatable, Hashable {
    /// Path of the ELF file.
    public var path: String
    /// Runtime address minus ELF virtual address.
    public var loadBias: UInt64
    /// Lowest runtime address of the image's loaded segments.
    public var start: UInt64
    /// End (exclusive) of the image's loaded segments.
    public var end: UInt64
    /// GNU build-id bytes; empty when the image has none.
    public var buildID: [UInt8]

    /// Creates an image record.
    public init(path: String, loadBias: UInt64, start: UInt64, end: UInt64, buildID: [UInt8]) {
        self.path = path
        self.loadBias = loadBias
        self.start = start
        self.end = end
        self.buildID = buildID
    }

    /// The build-id as lowercase hex, as `file` and `readelf -n` print it.
    public var buildIDHex: String {
        buildID.map { byte in
            let digits = Array("0123456789abcdef")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
        }.joined()
    }
}

/// What kind of episode a begin record opens.
public enum EpisodeKind: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// The main queue did not answer a ping within the threshold: one turn of the run loop never ended.
    case stall = 1
    /// The main queue kept answering, but the thread that services it stayed busy (it never slept voluntarily)
    /// for the sustained period: a loop that goes across run-loop turns.
    case saturated = 2

    /// `stall` or `saturated`.
    public var description: String { self == .stall ? "stall" : "saturated" }
}

/// An episode began: a stall (the main queue did not answer a ping within the threshold) or a saturated period
/// (it answered, but its thread stayed busy). Stalls and saturated episodes share one numbering.
public struct StallBeginRecord: Sendable, Equatable {
    /// Number of the episode within the capture, from 1.
    public var stallID: UInt32
    /// When the unanswered ping was sent (the stall's start), monotonic nanoseconds.
    public var startNs: UInt64
    /// When the watchdog noticed the stall (start plus the threshold, or a little later).
    public var detectedNs: UInt64
    /// Kernel thread id of the thread that services the main queue, the one being sampled.
    public var threadID: Int32
    /// A stall or a saturated episode (version 1 files hold stalls only).
    public var kind: EpisodeKind

    /// Creates a begin record.
    public init(stallID: UInt32, startNs: UInt64, detectedNs: UInt64, threadID: Int32, kind: EpisodeKind = .stall) {
        self.stallID = stallID
        self.startNs = startNs
        self.detectedNs = detectedNs
        self.threadID = threadID
        self.kind = kind
    }
}

/// Properties of one sample.
public struct SampleFlags: OptionSet, Sendable, Hashable {
    /// The raw bits.
    public var rawValue: UInt32
    /// Creates flags from raw bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The thread made no CPU progress since the previous sample, so it was not signalled: the previous stack of
    /// the same stall is reused. The record carries no frames.
    public static let repeated = SampleFlags(rawValue: 1 << 0)
    /// Some frame had no usable unwind information (JIT code, an object without `.eh_frame_hdr`): the handler
    /// followed the frame pointer from there, so the frames above it may miss one (written since format version
    /// 2's handler unwinder; earlier files used this bit for "libunwind's step-by-step unwinder was used").
    public static let framePointers = SampleFlags(rawValue: 1 << 1)
    /// The stack was deeper than the capture buffer; outermost frames are missing.
    public static let truncated = SampleFlags(rawValue: 1 << 2)
    /// The thread was in a system call: it was not signalled (a signal would cut a sleep short) and its stack was
    /// read from its stack memory (version 2).
    public static let fromStackMemory = SampleFlags(rawValue: 1 << 3)
    /// With ``repeated``: the thread was runnable (on a run queue) when it made no CPU progress: it waited for a
    /// CPU, it was not blocked. schedstat credits such a wait only when it ends, so the sample's `runQueueNs` does
    /// not include it yet (written since issue 17; older writers never set it).
    public static let waitingForCPU = SampleFlags(rawValue: 1 << 4)
    /// With ``fromStackMemory``: some frames were not found with unwind information but by scanning stack words
    /// (each checked against the call before it) or by following frame records, where the unwind-information walk
    /// could not go on: there a frame may be missing, or rarely stale (written since issue 18; older writers never
    /// set it, and their stacks from memory were all found so).
    public static let scannedFrames = SampleFlags(rawValue: 1 << 5)
    /// With ``fromStackMemory``: the unwind-information walk stopped before the outermost frame at a function
    /// without unwind information and without a word above its stack pointer that returns from a call into it.
    /// The frames above, if any, were found by scanning (``scannedFrames``); else the rest of the stack is dropped.
    /// The three `walkStopped` flags are the walk's counted reasons (written since issue 18's review; older writers
    /// never set them).
    public static let walkStoppedNoUnwindInfo = SampleFlags(rawValue: 1 << 6)
    /// With ``fromStackMemory``: the walk stopped at a frame whose rules need the frame pointer before any deeper
    /// frame saved it, and neither the function's prologue nor a frame record gave it.
    public static let walkStoppedFramePointer = SampleFlags(rawValue: 1 << 7)
    /// With ``fromStackMemory``: the walk stopped at unusable unwind rules, an unreadable stack word, a caller's
    /// frame not above its callee's, or a return address not after a call.
    public static let walkStoppedUnusable = SampleFlags(rawValue: 1 << 8)
    /// The handler knew libdispatch's code, so a ``SampleRecord/turn`` of 0 says the thread ran no queued block
    /// (unless ``framePointers`` or ``truncated`` say its walk could not tell). Written since issue 18's turns;
    /// without it a turn of 0 says nothing.
    public static let queueCodeKnown = SampleFlags(rawValue: 1 << 9)
}

/// One stack sample of the stalled thread.
public struct SampleRecord: Sendable, Equatable {
    /// The stall this sample belongs to.
    public var stallID: UInt32
    /// When the sample was taken, monotonic nanoseconds.
    public var timestampNs: UInt64
    /// CPU time the thread had consumed at that moment, nanoseconds.
    public var threadCPUNs: UInt64
    /// Time the thread had spent ready to run but waiting for a CPU, nanoseconds (0 when unknown).
    public var runQueueNs: UInt64
    /// See ``SampleFlags``.
    public var flags: SampleFlags
    /// Instruction addresses, leaf first: the interrupted instruction, then return addresses. Empty when
    /// `flags` contains `.repeated`.
    public var frames: [UInt64]
    /// Which queued block (a dispatch queue's turn) the thread was running: equal in every sample of one block,
    /// different for the next; 0 when unknown or not in a block. Written after the frames; absent in older files.
    public var turn: UInt64

    /// Creates a sample record.
    public init(
        stallID: UInt32, timestampNs: UInt64, threadCPUNs: UInt64, runQueueNs: UInt64 = 0, flags: SampleFlags,
        frames: [UInt64], turn: UInt64 = 0
    ) {
        self.turn = turn
        self.stallID = stallID
        self.timestampNs = timestampNs
        self.threadCPUNs = threadCPUNs
        self.runQueueNs = runQueueNs
        self.flags = flags
        self.frames = frames
    }
}

/// What the stalled thread was doing.
public enum StallState: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// It burned CPU (a loop, heavy work).
    case busy = 1
    /// It waited (a lock, I/O, sleep) with little CPU.
    case blocked = 2

    /// The share of the stall the thread spent running or ready to run (on a CPU or waiting in a run queue for
    /// one) at or above which it counts as busy. Counting run-queue time keeps a spinning thread busy on a loaded
    /// machine, where it gets only part of a core.
    public static let busyActiveRatio = 0.5

    /// Classifies a stall from its active ratio: (CPU time + run-queue wait) / wall time.
    public static func classify(activeRatio: Double) -> StallState {
        activeRatio >= busyActiveRatio ? .busy : .blocked
    }

    /// `busy` or `blocked`.
    public var description: String { self == .busy ? "busy" : "blocked" }
}

/// A stall ended: the main queue answered again.
public struct StallEndRecord: Sendable, Equatable {
    /// The stall that ended.
    public var stallID: UInt32
    /// When the main queue answered, monotonic nanoseconds.
    public var endNs: UInt64
    /// Thread CPU time consumed between the first and the last CPU reading of the stall, nanoseconds.
    public var cpuNs: UInt64
    /// Time the thread spent waiting in a run queue over the same span, nanoseconds (0 when unknown).
    public var runQueueNs: UInt64
    /// Wall time between those two readings, nanoseconds (the denominator of the CPU ratio).
    public var measuredNs: UInt64
    /// The classification.
    public var state: StallState
    /// Samples written for this stall (repeated ones included).
    public var sampleCount: UInt32
    /// Samples that could not be taken (the thread did not answer the signal in time).
    public var missedCount: UInt32
    /// Time the whole process was stopped (SIGSTOP, a frozen cgroup) during the episode, nanoseconds; not part
    /// of the episode's duration nor of `measuredNs`. Written after `missedCount`; 0 when absent (older writers).
    public var pausedNs: UInt64
    /// Run-queue wait of the thread over the stretches in which samples were missed (from the last sample taken
    /// before a miss to the next one taken, or to the episode's end): the wait for a CPU that cost those samples,
    /// nanoseconds. Written after `pausedNs`; nil when absent (older writers).
    public var missedRunQueueNs: UInt64?

    /// Creates a stall-end record.
    public init(
        stallID: UInt32, endNs: UInt64, cpuNs: UInt64, runQueueNs: UInt64 = 0, measuredNs: UInt64, state: StallState,
        sampleCount: UInt32, missedCount: UInt32, pausedNs: UInt64 = 0, missedRunQueueNs: UInt64? = nil
    ) {
        self.pausedNs = pausedNs
        self.missedRunQueueNs = missedRunQueueNs
        self.stallID = stallID
        self.endNs = endNs
        self.cpuNs = cpuNs
        self.runQueueNs = runQueueNs
        self.measuredNs = measuredNs
        self.state = state
        self.sampleCount = sampleCount
        self.missedCount = missedCount
    }
}

/// One record of a capture file.
public enum CaptureRecord: Sendable, Equatable {
    /// The process record, written first.
    case process(ProcessRecord)
    /// A loaded image.
    case image(ImageRecord)
    /// A stall began.
    case stallBegin(StallBeginRecord)
    /// A stack sample.
    case sample(SampleRecord)
    /// A stall ended.
    case stallEnd(StallEndRecord)
    /// What a blocked episode waited for (version 2).
    case blockedOn(BlockedOnRecord)
    /// The watchdog stopped and closed the file cleanly, at this monotonic time.
    case close(timestampNs: UInt64)
    /// Records dropped while the file did not accept writes (type 8; older readers skip it).
    case dropped(DroppedRecord)
    /// An app marker: an instant, or an interval's begin or end (type 9; older readers skip it).
    case marker(MarkerRecord)
    /// The sampled thread's blocked-signal mask, read when its samples went unanswered (type 10; older readers
    /// skip it).
    case signalMask(SignalMaskRecord)
    /// Every thread of the process during a blocked episode (type 11; older readers skip it).
    case threads(ThreadsRecord)
    /// The bytes of an image without a file, the vDSO (type 12; older readers skip it).
    case imageContents(ImageContentsRecord)
    /// When and from which files `stallprof symbolicate` resolved the capture's addresses (type 13; older readers
    /// skip it).
    case symbolication(SymbolicationRecord)
    /// Resolved addresses: symbols, lines, inlined frames (type 14; older readers skip it).
    case symbols(SymbolsRecord)
}
