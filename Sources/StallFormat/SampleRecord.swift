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
    /// not include it yet (older writers never set it).
    public static let waitingForCPU = SampleFlags(rawValue: 1 << 4)
    /// With ``fromStackMemory``: some frames were not found with unwind information but by scanning stack words
    /// (each checked against the call before it) or by following frame records, where the unwind-information walk
    /// could not go on: there a frame may be missing, or rarely stale (older writers never set it, and their
    /// stacks from memory were all found so).
    public static let scannedFrames = SampleFlags(rawValue: 1 << 5)
    /// With ``fromStackMemory``: the unwind-information walk stopped before the outermost frame at a function
    /// without unwind information and without a word above its stack pointer that returns from a call into it.
    /// The frames above, if any, were found by scanning (``scannedFrames``); else the rest of the stack is dropped.
    /// The three `walkStopped` flags are the walk's counted reasons (older writers never set
    /// them). On a signalled sample (newer writers): the walk stopped at a function without unwind information
    /// whose frame pointer could not be followed either; the outer frames are missing.
    public static let walkStoppedNoUnwindInfo = SampleFlags(rawValue: 1 << 6)
    /// With ``fromStackMemory``: the walk stopped at a frame whose rules need the frame pointer before any deeper
    /// frame saved it, and neither the function's prologue nor a frame record gave it.
    public static let walkStoppedFramePointer = SampleFlags(rawValue: 1 << 7)
    /// With ``fromStackMemory``: the walk stopped at unusable unwind rules, an unreadable stack word, a caller's
    /// frame not above its callee's, or a return address not after a call. On a signalled sample (newer writers):
    /// the walk stopped at unusable rules, an unreadable stack word or a caller's frame not above its callee's (a
    /// stale or corrupt stack), or the stack was not one the thread is known to have; the outer frames are missing.
    public static let walkStoppedUnusable = SampleFlags(rawValue: 1 << 8)
    /// The handler knew libdispatch's code, so a ``SampleRecord/turn`` of 0 says the thread ran no queued block
    /// (unless ``framePointers``, ``truncated``, ``walkStoppedNoUnwindInfo`` or ``walkStoppedUnusable`` say its
    /// walk could not tell). Without it (older writers
    /// never set it) a turn of 0 says nothing.
    public static let queueCodeKnown = SampleFlags(rawValue: 1 << 9)

    /// True when the capture signal took the sample on the running thread: neither ``repeated`` nor
    /// ``fromStackMemory``.
    public var isSignalled: Bool { isDisjoint(with: [.repeated, .fromStackMemory]) }
}

/// One stack sample of an episode's thread: what a ``SampleRecord`` holds beside its episode, and what a ``Stall``
/// lists.
public struct Sample: Sendable, Equatable {
    /// When the sample was taken, monotonic nanoseconds.
    public var timestampNs: UInt64
    /// CPU time the thread had consumed at that moment, nanoseconds.
    public var threadCPUNs: UInt64
    /// Time the thread had spent ready to run but waiting for a CPU, nanoseconds (0 when unknown).
    public var runQueueNs: UInt64
    /// See ``SampleFlags``.
    public var flags: SampleFlags
    /// Instruction addresses, leaf first: the interrupted instruction, then return addresses. In a record, empty
    /// when `flags` contains `.repeated`; in a ``Stall``, a repeated sample carries the previous stack.
    public var frames: [UInt64]
    /// Which queued block (a dispatch queue's turn) the thread was running: equal in every sample of one block,
    /// different for the next; 0 when unknown or not in a block. Written after the frames; absent in older files.
    public var turn: UInt64

    /// Creates a sample.
    public init(
        timestampNs: UInt64, threadCPUNs: UInt64, runQueueNs: UInt64 = 0, flags: SampleFlags, frames: [UInt64],
        turn: UInt64 = 0
    ) {
        (self.timestampNs, self.threadCPUNs, self.runQueueNs) = (timestampNs, threadCPUNs, runQueueNs)
        (self.flags, self.frames, self.turn) = (flags, frames, turn)
    }
}

/// A sample record (type 4): one ``Sample`` of an episode, whose fields it reads and writes as its own
/// (`record.frames`).
@dynamicMemberLookup
public struct SampleRecord: Sendable, Equatable {
    /// The stall this sample belongs to.
    public var stallID: UInt32
    /// The sample.
    public var sample: Sample

    /// Creates a sample record.
    public init(
        stallID: UInt32, timestampNs: UInt64, threadCPUNs: UInt64, runQueueNs: UInt64 = 0, flags: SampleFlags,
        frames: [UInt64], turn: UInt64 = 0
    ) {
        self.stallID = stallID
        sample = Sample(
            timestampNs: timestampNs, threadCPUNs: threadCPUNs, runQueueNs: runQueueNs, flags: flags, frames: frames,
            turn: turn)
    }

    /// A field of ``sample``.
    public subscript<Value>(dynamicMember field: WritableKeyPath<Sample, Value>) -> Value {
        get { sample[keyPath: field] }
        set { sample[keyPath: field] = newValue }
    }
}

extension SampleRecord: RecordCoding {
    static let recordType = CaptureFormat.RecordType.sample
    var captureRecord: CaptureRecord { .sample(self) }

    /// `stallID:u32 timestampNs:u64 threadCPUNs:u64 runQueueNs:u64 flags:u32 n:u32 n*frame:u64 turn:u64`
    /// (older files end with the frames).
    func encode(into out: inout [UInt8]) {
        out.appendLE(stallID, sample.timestampNs, sample.threadCPUNs, sample.runQueueNs, sample.flags.rawValue)
        out.appendFrames(sample.frames)
        out.appendLE(sample.turn)
    }

    static func decode(_ c: inout ByteCursor) throws -> SampleRecord {
        let id = try c.u32(), t = try c.u64(), cpu = try c.u64(), wait = try c.u64()
        let flags = SampleFlags(rawValue: try c.u32())
        let frames = try c.frames()
        let turn = c.remaining >= 8 ? try c.u64() : 0  // older files end with the frames
        return SampleRecord(
            stallID: id, timestampNs: t, threadCPUNs: cpu, runQueueNs: wait, flags: flags, frames: frames, turn: turn)
    }
}
