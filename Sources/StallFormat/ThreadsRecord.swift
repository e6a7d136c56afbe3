/// Every thread of the process during a blocked episode (type 11): who else ran, who waits for what, each with its
/// stack. The watchdog writes a snapshot when it first finds the episode's thread waiting, another each second
/// the episode lasts, and at the episode's end a CPU-only reading, so that the CPU each thread used during the
/// episode is known (docs/WATCHDOG.md, "Every thread in view").
public struct ThreadsRecord: Sendable, Equatable {
    /// What a record holds.
    public enum Phase: UInt8, Sendable, CaseIterable {
        /// State, wait and stack of every thread.
        case snapshot = 1
        /// Only each thread's CPU time (the episode ended): no states, no stacks.
        case cpu = 2
    }

    /// The episode.
    public var stallID: UInt32
    /// When the threads were looked at (the first one), monotonic nanoseconds.
    public var timestampNs: UInt64
    /// A snapshot or a CPU-only reading.
    public var phase: Phase
    /// Threads the process had; more than `threads.count` when some were left out (the thread or time budget).
    public var totalThreads: UInt32
    /// The threads looked at, in /proc's order.
    public var threads: [ThreadState]

    /// Creates a threads record.
    public init(stallID: UInt32, timestampNs: UInt64, phase: Phase, totalThreads: UInt32, threads: [ThreadState]) {
        (self.stallID, self.timestampNs, self.phase, self.totalThreads) = (stallID, timestampNs, phase, totalThreads)
        self.threads = threads
    }
}

/// One thread in a ``ThreadsRecord``.
public struct ThreadState: Sendable, Equatable {
    /// Kernel thread id.
    public var tid: Int32
    /// The thread's name (`comm`), empty when unknown.
    public var name: String
    /// The state letter from /proc (`R` running or runnable, `S` sleeping, `D` uninterruptible...) as an ASCII byte;
    /// 0 when unknown.
    public var state: UInt8
    /// The system call it sleeps in, or -1 (running, or not known).
    public var syscall: Int32
    /// What it waits for, as the watchdog could tell (``BlockedOnRecord/WaitKind``).
    public var waitKind: BlockedOnRecord.WaitKind
    /// The object waited on: a futex word's address, or a descriptor; 0 when none.
    public var object: UInt64
    /// The thread it waits for, when known for certain (a mutex's owner, a queue's running thread, a joined
    /// thread, an rwlock's writer); 0 otherwise.
    public var ownerTID: Int32
    /// CPU time the thread had used at that moment, nanoseconds (from schedstat).
    public var cpuNs: UInt64
    /// How ``frames`` were taken (signalled, from stack memory, truncated).
    public var flags: BlockedOnRecord.OwnerFlags
    /// A readable detail: `read fd 5 (pipe:[1234])`, `futex op 0 on 0x...`; may be empty.
    public var detail: String
    /// The label of the queue a `dispatch-sync` wait is for; empty otherwise.
    public var queueLabel: String
    /// Its stack, leaf first; empty in a CPU-only reading or when it could not be taken.
    public var frames: [UInt64]

    /// Creates a thread state.
    public init(
        tid: Int32, name: String = "", state: UInt8 = 0, syscall: Int32 = -1, waitKind: BlockedOnRecord.WaitKind = .unknown,
        object: UInt64 = 0, ownerTID: Int32 = 0, cpuNs: UInt64 = 0, flags: BlockedOnRecord.OwnerFlags = [],
        detail: String = "", queueLabel: String = "", frames: [UInt64] = []
    ) {
        (self.tid, self.name, self.state, self.syscall, self.waitKind) = (tid, name, state, syscall, waitKind)
        (self.object, self.ownerTID, self.cpuNs, self.flags, self.detail) = (object, ownerTID, cpuNs, flags, detail)
        (self.queueLabel, self.frames) = (queueLabel, frames)
    }

    /// The state letter as text (`R`, `S`...), `?` when unknown.
    public var stateLetter: String { state == 0 ? "?" : String(UnicodeScalar(state)) }
}

extension ThreadsRecord: RecordCoding {
    static let recordType = CaptureFormat.RecordType.threads
    var captureRecord: CaptureRecord { .threads(self) }

    /// The payload: stallID u32, timestampNs u64, phase u8, totalThreads u32, count u32, then each thread: tid i32,
    /// state u8, syscall i32, waitKind u8, object u64, ownerTID i32, cpuNs u64, flags u32, name, detail, queueLabel
    /// (strings), frames.
    func encode(into out: inout [UInt8]) {
        out.appendLE(stallID, timestampNs, phase.rawValue, totalThreads, UInt32(threads.count))
        for thread in threads {
            out.appendLE(thread.tid, thread.state, thread.syscall, thread.waitKind.rawValue, thread.object,
                         thread.ownerTID, thread.cpuNs, thread.flags.rawValue)
            out.appendString(thread.name)
            out.appendString(thread.detail)
            out.appendString(thread.queueLabel)
            out.appendFrames(thread.frames)
        }
    }

    /// Reads the payload `encode` writes.
    static func decode(_ c: inout ByteCursor) throws -> ThreadsRecord {
        let id = try c.u32(), t = try c.u64(), rawPhase = try c.u8()
        guard let phase = Phase(rawValue: rawPhase) else { throw c.error("unknown threads record phase \(rawPhase)") }
        let total = try c.u32(), count = Int(try c.u32())
        guard count <= c.remaining / 40 else { throw c.error("thread count \(count) exceeds the record") }
        var threads: [ThreadState] = []
        threads.reserveCapacity(count)
        for _ in 0..<count {
            let tid = try c.i32(), state = try c.u8(), call = try c.i32(), rawKind = try c.u8()
            let object = try c.u64(), owner = try c.i32(), cpu = try c.u64()
            let flags = BlockedOnRecord.OwnerFlags(rawValue: try c.u32())
            let name = try c.string(), detail = try c.string(), label = try c.string()
            threads.append(ThreadState(
                tid: tid, name: name, state: state, syscall: call,
                waitKind: BlockedOnRecord.WaitKind(rawValue: rawKind) ?? .unknown, object: object, ownerTID: owner,
                cpuNs: cpu, flags: flags, detail: detail, queueLabel: label, frames: try c.frames()))
        }
        return ThreadsRecord(stallID: id, timestampNs: t, phase: phase, totalThreads: total, threads: threads)
    }
}
