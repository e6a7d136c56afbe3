import StallFormat

extension BlockedOnSummary {
    /// Resolves a blocked-on record: syscall names for the captured machine, the owner's stack named root first.
    init(
        _ record: BlockedOnRecord, symbolizer: Symbolizer, rule: AppCodeRule, architecture: SyscallNames.Architecture
    ) {
        let inCall = record.syscall >= 0
        kind = record.waitKind.description
        syscall = inCall ? SyscallNames.name(Int(record.syscall), architecture: architecture) : nil
        syscallNumber = inCall ? Int(record.syscall) : nil
        argument = record.argument
        detail = record.detail
        let isMutex = record.waitKind == .mutex
        ownerTid = isMutex && record.ownerTID > 0 ? Int(record.ownerTID) : nil
        ownerName = isMutex ? record.ownerName : ""
        ownerState = isMutex && record.ownerState > 32 && record.ownerState < 127
            ? String(UnicodeScalar(record.ownerState)) : nil
        ownerSyscall = isMutex && record.ownerSyscall >= 0
            ? SyscallNames.name(Int(record.ownerSyscall), architecture: architecture) : nil
        let frames = isMutex ? record.ownerFrames : []
        let stack = symbolizer.rootFirstNames(leafFirst: frames)
        ownerStack = stack
        let app = rule.judge(leafFirst: frames).app
        ownerFrame = app.lastIndex(of: true).map { stack[$0] } ?? stack.last
        ownerStackSource = frames.isEmpty ? nil
            : record.ownerFlags.contains(.signalled) ? "signal"
            : record.ownerFlags.contains(.fromStackMemory) ? "stack memory" : nil
        ownerStackTruncated = record.ownerFlags.contains(.truncated)
    }

    /// One sentence: what the thread waited for and, for a mutex, who held it and where that thread was.
    public var sentence: String { sentence(naming: { $0 }) }

    /// The sentence, with the owner's function name passed through `naming` (the text report shortens it).
    public func sentence(naming: (String) -> String) -> String {
        switch kind {
        case "mutex":
            guard let ownerTid else { return "waiting for a mutex whose owner is unknown" }
            var text = "waiting for a mutex held by thread \(ownerTid)" + (ownerName.isEmpty ? "" : " (\(ownerName))")
            if let ownerFrame { text += ", which was in \(naming(ownerFrame))" }
            if let ownerSyscall {
                text += (ownerFrame == nil ? ", which was" : ",") + " sleeping in \(ownerSyscall)"
            } else if ownerState == "R" {
                text += (ownerFrame == nil ? ", which was" : ",") + " running"
            }
            return text
        case "futex":
            return "waiting on a futex without a known owner (a condition variable, a semaphore or another lock)"
                + (argument == 0 ? "" : " at 0x" + String(argument, radix: 16))
        case "syscall":
            var text = "waiting in \(syscall ?? "a system call")"
            if let syscall, Self.descriptorCalls.contains(syscall) { text += " on file descriptor \(argument)" }
            return text + (detail.isEmpty ? "" : ": \(detail)")
        default:
            return "waiting for something the watchdog could not identify" + (detail.isEmpty ? "" : ": \(detail)")
        }
    }

    /// Calls whose first argument is a file descriptor.
    static let descriptorCalls: Set<String> = [
        "read", "write", "readv", "writev", "pread64", "pwrite64", "accept", "accept4", "connect", "sendto",
        "recvfrom", "sendmsg", "recvmsg", "recvmmsg", "sendmmsg", "epoll_wait", "epoll_pwait", "epoll_pwait2",
        "flock", "fsync", "fdatasync", "ioctl",
    ]
}
