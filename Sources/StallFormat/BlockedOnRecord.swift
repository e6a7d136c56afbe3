/// What a blocked episode's thread was waiting for, and who held it: taken once per episode from /proc (no
/// signal to a sleeping thread).
public struct BlockedOnRecord: Sendable, Equatable {
    /// What kind of wait.
    public enum WaitKind: UInt8, Sendable, CaseIterable, CustomStringConvertible {
        /// Not known (the thread was running when looked at, or /proc could not be read).
        case unknown = 0
        /// A pthread mutex: ``BlockedOnRecord/ownerTID`` names the thread that holds it.
        case mutex = 1
        /// A futex that is not a mutex with a known owner: a condition variable, a semaphore, a custom lock.
        case futex = 2
        /// Another system call the watchdog names no further: ``BlockedOnRecord/syscall`` says which.
        case syscall = 3
        /// `DispatchQueue.sync` / `dispatch_sync` onto a serial queue: ``BlockedOnRecord/queueLabel`` names the
        /// queue and ``BlockedOnRecord/ownerTID`` the thread running a block on it (0 when none was).
        case dispatchSync = 4
        /// `pthread_join` (Foundation's `Thread` join): ``BlockedOnRecord/ownerTID`` is the joined thread.
        case join = 5
        /// A glibc rwlock: ``BlockedOnRecord/ownerTID`` is the writer holding it.
        case rwlock = 6
        /// A system call on a descriptor: read, write, recv, send, accept, connect, poll, epoll_wait...
        case io = 7
        /// nanosleep, usleep, sleep: the requested duration is in the detail.
        case sleep = 8
        /// A semaphore: `DispatchSemaphore`, `sem_wait` (named from the stack by the analyzer).
        case semaphore = 9
        /// `DispatchGroup.wait` (named from the stack by the analyzer).
        case group = 10
        /// A condition variable: `pthread_cond_wait`, `NSCondition` (named from the stack by the analyzer).
        case condition = 11

        /// The name used in reports and JSON: `unknown`, `mutex`, `futex`, `syscall`, `dispatch-sync`, `join`,
        /// `rwlock`, `io`, `sleep`, `semaphore`, `group` or `condition`.
        public var description: String { Self.names[Int(rawValue)] }

        /// The names, by raw value.
        private static let names = [
            "unknown", "mutex", "futex", "syscall", "dispatch-sync", "join", "rwlock", "io", "sleep", "semaphore", "group",
            "condition",
        ]

        /// True for the kinds whose ``BlockedOnRecord/ownerTID`` is the thread waited for, known for certain.
        public var ownerIsCertain: Bool { [.mutex, .dispatchSync, .join, .rwlock].contains(self) }
    }

    /// How the owner's stack was obtained.
    public struct OwnerFlags: OptionSet, Sendable, Hashable {
        /// The raw bits.
        public var rawValue: UInt32
        /// Creates flags from raw bits.
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// The owner was running (not in a system call) and was sampled once with the capture signal.
        public static let signalled = OwnerFlags(rawValue: 1 << 0)
        /// The owner slept in a system call: its stack was read from its stack memory, starting at the stack and
        /// instruction pointers /proc reports (exact frame-pointer frames, approximate elsewhere).
        public static let fromStackMemory = OwnerFlags(rawValue: 1 << 1)
        /// The owner's stack was deeper than the buffer; outermost frames are missing.
        public static let truncated = OwnerFlags(rawValue: 1 << 2)
    }

    /// The episode this describes.
    public var stallID: UInt32
    /// When the blocked thread was looked at, monotonic nanoseconds.
    public var timestampNs: UInt64
    /// The kind of wait.
    public var waitKind: WaitKind
    /// The system call number the blocked thread was in (x86_64 or aarch64 numbering of the captured machine),
    /// or -1 when it was not in one.
    public var syscall: Int32
    /// The syscall's first argument: the futex word's address for futex waits, the descriptor for read or poll.
    public var argument: UInt64
    /// Kernel thread id of the mutex's owner; 0 when unknown or not a mutex.
    public var ownerTID: Int32
    /// The owner's thread name (`comm`), empty when unknown.
    public var ownerName: String
    /// The owner's state letter from /proc (`R`, `S`, `D`...) as an ASCII byte; 0 when unknown.
    public var ownerState: UInt8
    /// The system call the owner was in, or -1 when it was running or unknown.
    public var ownerSyscall: Int32
    /// How ``ownerFrames`` were obtained.
    public var ownerFlags: OwnerFlags
    /// A readable detail of the wait, e.g. `read fd 5 (pipe:[1234])`; may be empty.
    public var detail: String
    /// The owner's stack, leaf first, like a sample's frames; empty when it could not be taken.
    public var ownerFrames: [UInt64]
    /// The label of the queue a `dispatch-sync` wait is for; empty otherwise (and in older captures).
    public var queueLabel: String

    /// Creates a blocked-on record.
    public init(
        stallID: UInt32, timestampNs: UInt64, waitKind: WaitKind, syscall: Int32, argument: UInt64 = 0,
        ownerTID: Int32 = 0, ownerName: String = "", ownerState: UInt8 = 0, ownerSyscall: Int32 = -1,
        ownerFlags: OwnerFlags = [], detail: String = "", ownerFrames: [UInt64] = [], queueLabel: String = ""
    ) {
        (self.queueLabel, self.stallID, self.timestampNs, self.waitKind) = (queueLabel, stallID, timestampNs, waitKind)
        (self.syscall, self.argument, self.ownerTID, self.ownerName) = (syscall, argument, ownerTID, ownerName)
        (self.ownerState, self.ownerSyscall, self.ownerFlags) = (ownerState, ownerSyscall, ownerFlags)
        (self.detail, self.ownerFrames) = (detail, ownerFrames)
    }
}

extension BlockedOnRecord: RecordCoding {
    static let recordType = CaptureFormat.RecordType.blockedOn
    var captureRecord: CaptureRecord { .blockedOn(self) }

    /// `stallID:u32 timestampNs:u64 waitKind:u8 syscall:i32 argument:u64 ownerTID:i32 ownerState:u8
    /// ownerSyscall:i32 ownerFlags:u32 ownerName:string detail:string n:u32 n*frame:u64 queueLabel:string`
    /// (older files end before `queueLabel`).
    func encode(into out: inout [UInt8]) {
        out.appendLE(stallID, timestampNs, waitKind.rawValue, syscall, argument, ownerTID, ownerState, ownerSyscall,
                     ownerFlags.rawValue)
        out.appendString(ownerName)
        out.appendString(detail)
        out.appendFrames(ownerFrames)
        out.appendString(queueLabel)
    }

    static func decode(_ c: inout ByteCursor) throws -> BlockedOnRecord {
        let id = try c.u32(), t = try c.u64(), rawKind = try c.u8()
        let waitKind = WaitKind(rawValue: rawKind) ?? .unknown  // a newer writer's kind
        let call = try c.i32(), argument = try c.u64(), owner = try c.i32(), ownerState = try c.u8()
        let ownerCall = try c.i32(), flags = OwnerFlags(rawValue: try c.u32())
        let name = try c.string(), detail = try c.string()
        let frames = try c.frames()
        return BlockedOnRecord(
            stallID: id, timestampNs: t, waitKind: waitKind, syscall: call, argument: argument, ownerTID: owner,
            ownerName: name, ownerState: ownerState, ownerSyscall: ownerCall, ownerFlags: flags, detail: detail,
            ownerFrames: frames, queueLabel: c.remaining > 0 ? try c.string() : "")
    }
}
