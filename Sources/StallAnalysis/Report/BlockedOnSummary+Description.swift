import StallFormat

extension BlockedOnSummary {
    /// Resolves a blocked-on record: syscall names for the captured machine, the owner's stack named root first,
    /// the wait named from the blocked thread's stack when the watchdog could not (its stack when the record was
    /// taken), and the
    /// episode's thread snapshots (see ``addThreads(of:record:symbolizer:rule:architecture:)``).
    init(
        _ record: BlockedOnRecord, stall: Stall, symbolizer: Symbolizer, rule: AppCodeRule,
        architecture: SyscallNames.Architecture
    ) {
        let inCall = record.syscall >= 0
        // The stack of the wait the record describes: the last one taken by its time (else the first after).
        let stacks = stall.samples.filter { !$0.frames.isEmpty }
        let stack = (stacks.last { $0.timestampNs <= record.timestampNs } ?? stacks.first)?.frames ?? []
        let names = symbolizer.rootFirstNames(leafFirst: stack).reversed()
        kind = WaitFrames.refine(record.waitKind, leafFirst: Array(names))
        syscall = inCall ? SyscallNames.name(Int(record.syscall), architecture: architecture) : nil
        syscallNumber = inCall ? Int(record.syscall) : nil
        argument = record.argument
        detail = record.detail
        // The owner stands only when the stack does not show another wait than the one the watchdog named.
        let owned = record.ownerTID > 0 && WaitFrames.keepsOwner(record.waitKind, refined: kind)
        ownerTid = owned ? Int(record.ownerTID) : nil
        ownerName = owned ? record.ownerName : ""
        ownerState = owned && record.ownerState > 32 && record.ownerState < 127
            ? String(UnicodeScalar(record.ownerState)) : nil
        ownerSyscall = owned && record.ownerSyscall >= 0
            ? SyscallNames.name(Int(record.ownerSyscall), architecture: architecture) : nil
        let frames = owned ? record.ownerFrames : []
        ownerStack = symbolizer.rootFirstNames(leafFirst: frames)
        ownerStackPlaces = symbolizer.rootFirstPlaces(leafFirst: frames)
        ownerFrame = Self.frame(frames, names: ownerStack, places: ownerStackPlaces, rule: rule)
        ownerStackSource = frames.isEmpty ? nil
            : record.ownerFlags.contains(.signalled) ? "signal"
            : record.ownerFlags.contains(.fromStackMemory) ? "stack memory" : nil
        ownerStackTruncated = record.ownerFlags.contains(.truncated)
        queueLabel = record.waitKind == .dispatchSync && kind == "dispatch-sync" ? record.queueLabel : ""
        if let ownerTid {
            waitsFor = [WaitedThread(
                tid: ownerTid, name: ownerName, state: ownerSyscall.map { "in \($0)" } ?? (ownerState == "R" ? "running" : "?"),
                certain: true, stack: ownerStack, stackPlaces: ownerStackPlaces, frame: ownerFrame)]
        }
        addThreads(of: stall, record: record, symbolizer: symbolizer, rule: rule, architecture: architecture)
    }

    /// The leaf-most app frame of `frames` (leaf first; `names` and `places` root first), else its leaf-most
    /// frame of a library module (a SwiftPM dependency's), else the leaf. Where the compiler inlined functions at
    /// that frame's spot (`places`), the innermost of them that is not the toolchain's nor a helper: the function
    /// the thread was in, in the source (a closure's frame whose code is `Shapes.lockInOrderBA()`).
    static func frame(_ frames: [UInt64], names: [String], places: [SourcePlace?], rule: AppCodeRule) -> String? {
        let judged = rule.judge(leafFirst: frames)  // root first, like `names`
        guard let index = judged.app.lastIndex(of: true) ?? judged.modules.lastIndex(where: { $0 != nil }) else {
            return names.last
        }
        let leafIndex = frames.count - 1 - index
        if index < places.count, let inlined = places[index]?.inlined, leafIndex >= 0,
            let inner = rule.innermostOwnInlined(frames[leafIndex], isReturnAddress: leafIndex > 0), inner < inlined.count
        {
            return inlined[inner].function
        }
        return names[index]
    }

    /// One sentence: what the thread waited for and, when known, who held it and where that thread was.
    public var sentence: String { sentence(naming: { $0 }) }

    /// The sentence, with the owner's function name passed through `naming` (the text report shortens it).
    public func sentence(naming: (String) -> String) -> String {
        let address = argument == 0 ? "" : " at 0x" + String(argument, radix: 16)
        let queue = queueLabel.isEmpty ? "a serial queue" : "queue '\(queueLabel)'"
        switch kind {
        case "mutex":
            return ownerClause("waiting for a mutex held by", naming) ?? "waiting for a mutex whose owner is unknown"
        case "rwlock":
            return ownerClause("waiting for an rwlock write-locked by", naming)
                ?? "waiting for an rwlock\(address) (its writer is not known)"
        case "join":
            return ownerClause("waiting to join", naming) ?? "waiting to join a thread (which one is not known)"
        case "dispatch-sync":
            return ownerClause("waiting in DispatchQueue.sync for \(queue), whose block runs on", naming)
                ?? "waiting in DispatchQueue.sync for \(queue)" + (queueLabel.isEmpty
                    ? " (the watchdog could not read which, nor the thread running its block)"
                    : "; no thread was running a block on it")
        case "condition" where ownerTid != nil:
            return ownerClause("woken from a condition variable and re-taking its mutex\(address), held by", naming)!
        case "semaphore", "group", "condition":
            let what = ["semaphore": "a semaphore (DispatchSemaphore, sem_wait)", "group": "a DispatchGroup",
                        "condition": "a condition variable"][kind]!
            return "waiting on \(what)\(address): who will signal it is not known for certain"
                + (waitsFor.isEmpty ? "" : "; candidates below")
        case "futex":
            return "waiting on a futex without a known owner (a condition variable, a semaphore or another lock)"
                + address
        case "sleep":
            return "sleeping" + (detail.isEmpty ? "" : ": \(detail)")
        case "io", "syscall":
            var text = "waiting in \(syscall ?? "a system call")"
            if let syscall, Self.descriptorCalls.contains(syscall) { text += " on file descriptor \(argument)" }
            return text + (detail.isEmpty ? "" : ": \(detail)")
        default:
            return "waiting for something the watchdog could not identify" + (detail.isEmpty ? "" : ": \(detail)")
        }
    }

    /// `<lead> thread 12 (db-worker), which was in f, sleeping in nanosleep`; nil without an owner.
    private func ownerClause(_ lead: String, _ naming: (String) -> String) -> String? {
        guard let ownerTid else { return nil }
        var text = "\(lead) thread \(ownerTid)" + (ownerName.isEmpty ? "" : " (\(ownerName))")
        if let ownerFrame { text += ", which was in \(naming(ownerFrame))" }
        if let ownerSyscall {
            text += (ownerFrame == nil ? ", which was" : ",") + " sleeping in \(ownerSyscall)"
        } else if ownerState == "R" {
            text += (ownerFrame == nil ? ", which was" : ",") + " running"
        }
        return text
    }

    /// Calls whose first argument is a file descriptor.
    static let descriptorCalls: Set<String> = [
        "read", "write", "readv", "writev", "pread64", "pwrite64", "accept", "accept4", "connect", "sendto",
        "recvfrom", "sendmsg", "recvmsg", "recvmmsg", "sendmmsg", "epoll_wait", "epoll_pwait", "epoll_pwait2",
        "flock", "fsync", "fdatasync", "ioctl",
    ]
}
