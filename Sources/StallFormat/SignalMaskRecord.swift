/// The sampled thread's blocked-signal mask (type 10), read by the watchdog from `/proc/self/task/<tid>/status`
/// (`SigBlk`) once per episode, when a sample request first counted against the thread (it ran for a while with
/// the request unanswered). A thread that blocks the capture signal can never be sampled with it: the record is
/// what lets a report say why such an episode has no stacks. Version 2 files may hold it; readers that do not know
/// type 10 skip it.
public struct SignalMaskRecord: Sendable, Equatable {
    /// The episode whose samples went unanswered.
    public var stallID: UInt32
    /// When the mask was read, monotonic nanoseconds.
    public var timestampNs: UInt64
    /// Kernel thread id of the thread whose mask this is (the episode's sampled thread).
    public var threadID: Int32
    /// The capture signal the watchdog used (Linux numbering: 27 SIGPROF, 10 SIGUSR1, 34 SIGRTMIN...).
    public var signal: Int32
    /// The thread's blocked signals as /proc shows them: bit n-1 set when signal n is blocked.
    public var blockedMask: UInt64

    /// Creates a signal-mask record.
    public init(stallID: UInt32, timestampNs: UInt64, threadID: Int32, signal: Int32, blockedMask: UInt64) {
        (self.stallID, self.timestampNs, self.threadID, self.signal) = (stallID, timestampNs, threadID, signal)
        self.blockedMask = blockedMask
    }

    /// True when the mask blocks ``signal``: the thread could not be sampled with it.
    public var blocksSignal: Bool { Self.mask(blockedMask, contains: signal) }

    /// True when `mask` (bit n-1 for signal n) contains `signal`; false for a number outside 1...64.
    public static func mask(_ mask: UInt64, contains signal: Int32) -> Bool {
        (1...64).contains(signal) && mask & (1 << UInt64(signal - 1)) != 0
    }
}

extension SignalMaskRecord: RecordCoding {
    static let recordType = CaptureFormat.RecordType.signalMask
    var captureRecord: CaptureRecord { .signalMask(self) }

    /// `stallID:u32 timestampNs:u64 threadID:i32 signal:i32 blockedMask:u64`.
    func encode(into out: inout [UInt8]) {
        out.appendLE(stallID, timestampNs, threadID, signal, blockedMask)
    }

    static func decode(_ c: inout ByteCursor) throws -> SignalMaskRecord {
        SignalMaskRecord(
            stallID: try c.u32(), timestampNs: try c.u64(), threadID: try c.i32(), signal: try c.i32(),
            blockedMask: try c.u64())
    }
}
