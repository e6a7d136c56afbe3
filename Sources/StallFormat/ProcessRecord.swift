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
        (self.pid, self.startMonotonicNs, self.startWallNs) = (pid, startMonotonicNs, startWallNs)
        (self.thresholdNs, self.sampleIntervalNs, self.executable) = (thresholdNs, sampleIntervalNs, executable)
    }
}

extension ProcessRecord: RecordCoding {
    static let recordType = CaptureFormat.RecordType.process
    var captureRecord: CaptureRecord { .process(self) }

    /// `pid:i32 startMonotonicNs:u64 startWallNs:u64 thresholdNs:u64 sampleIntervalNs:u64 executable:string`.
    func encode(into out: inout [UInt8]) {
        out.appendLE(pid, startMonotonicNs, startWallNs, thresholdNs, sampleIntervalNs)
        out.appendString(executable)
    }

    static func decode(_ c: inout ByteCursor) throws -> ProcessRecord {
        ProcessRecord(
            pid: try c.i32(), startMonotonicNs: try c.u64(), startWallNs: try c.u64(), thresholdNs: try c.u64(),
            sampleIntervalNs: try c.u64(), executable: try c.string())
    }
}
