import StallFormat

/// One thread of the process as a blocked episode's snapshot showed it (docs/REPORT.md, "Every thread in view").
public struct ThreadSummary: Sendable, Equatable {
    /// Kernel thread id.
    public var tid: Int
    /// Its name (`comm`), empty when unknown.
    public var name: String
    /// Its /proc state letter (`R`, `S`, `D`...), `?` when unknown.
    public var state: String
    /// The system call it slept in; nil when it ran.
    public var syscall: String?
    /// The watchdog's description of that call (`read fd 5 (pipe:[1234])`), `running`, or empty.
    public var detail: String
    /// What it waited for (the wait kinds of ``BlockedOnSummary/kind``), `unknown` when it ran.
    public var waitKind: String
    /// CPU time it used from the first snapshot to the last reading of the episode, milliseconds; nil when only
    /// one reading exists.
    public var cpuMs: Double?
    /// Its stack, root first (empty when it could not be taken).
    public var stack: [String]
    /// Where each frame of ``stack`` was in the source; empty when none is known.
    public var stackPlaces: [SourcePlace?] = []
    /// Its leaf-most app frame, or its leaf when none is app code; nil without a stack.
    public var frame: String?
    /// Why it matters for this episode (`owner`, `deadlock`, `ran`, `same object`), empty for the rest.
    public var why: String
}

/// A thread the blocked thread waits for: certain (a mutex's owner, the thread running the queue's block, the
/// joined thread, an rwlock's writer) or a ranked candidate.
public struct WaitedThread: Sendable, Equatable {
    /// Kernel thread id.
    public var tid: Int
    /// Its name, empty when unknown.
    public var name: String
    /// What it was doing: `running`, or the call it slept in.
    public var state: String
    /// True for the thread waited for; false for a candidate (the report says the signaller is not known).
    public var certain: Bool
    /// Its stack, root first.
    public var stack: [String]
    /// Where each frame of ``stack`` was in the source; empty when none is known.
    public var stackPlaces: [SourcePlace?] = []
    /// Its leaf-most app frame, or its leaf.
    public var frame: String?
}

/// One thread of a deadlock cycle: it wants an object the next one holds.
public struct DeadlockLink: Sendable, Equatable {
    /// Kernel thread id.
    public var tid: Int
    /// Its name.
    public var name: String
    /// The object it holds that the previous thread of the cycle wants.
    public var holds: UInt64
    /// The object it waits for.
    public var wants: UInt64
    /// Its leaf-most app frame.
    public var frame: String?
}

/// Names waits from the frames on the stack: what the watchdog cannot tell without symbols.
enum WaitFrames {
    /// Function-name fragments of each wait primitive, most specific first.
    static let rules: [(kind: String, fragments: [String])] = [
        ("dispatch-sync", ["_dispatch_sync_f_slow", "__DISPATCH_WAIT_FOR_QUEUE__", "_dispatch_sync_wait", "DispatchQueue.sync"]),
        ("group", ["_dispatch_group_wait_slow", "dispatch_group_wait", "DispatchGroup.wait"]),
        ("semaphore", ["_dispatch_semaphore_wait_slow", "dispatch_semaphore_wait", "DispatchSemaphore.wait", "sem_wait",
                       "sem_timedwait", "sem_clockwait", "__new_sem_wait"]),
        ("condition", ["pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait", "__pthread_cond_wait",
                       "NSCondition.wait"]),
        ("join", ["pthread_join", "pthread_clockjoin", "pthread_timedjoin"]),
        ("rwlock", ["pthread_rwlock_rdlock", "pthread_rwlock_wrlock", "pthread_rwlock_timed", "pthread_rwlock_clock"]),
    ]

    /// The wait the frames show, leaf first: the rule of the leaf-most frame that matches any; nil when none does.
    static func kind(leafFirst names: [String]) -> String? {
        for name in names {
            for rule in rules where rule.fragments.contains(where: { name.contains($0) }) { return rule.kind }
        }
        return nil
    }

    /// The kind a report names: the watchdog's when it knew the owner or the call (`mutex`, `io`...), else the
    /// frames' (a futex without a known owner is a semaphore, a group, a condition... by its stack). A join, an
    /// rwlock or a dispatch_sync the watchdog found from the memory around a futex word alone gives way to a
    /// different wait primitive on the stack (then the owner it named is not the thread waited for). A mutex wait
    /// inside `pthread_cond_wait` is a condition's waiter, woken and re-taking its mutex: `condition`, owner kept.
    static func refine(_ recorded: BlockedOnRecord.WaitKind, leafFirst names: [String]) -> String {
        switch recorded {
        case .futex, .unknown, .syscall: return kind(leafFirst: names) ?? recorded.description
        case .join, .rwlock, .dispatchSync: return kind(leafFirst: names) ?? recorded.description
        case .mutex: return kind(leafFirst: names) == "condition" ? "condition" : recorded.description
        default: return recorded.description
        }
    }

    /// True when the owner the watchdog named for a `recorded` wait is the thread waited for, the wait being
    /// `refined` by the stack: the same wait, or a condition's waiter re-taking its mutex.
    static func keepsOwner(_ recorded: BlockedOnRecord.WaitKind, refined: String) -> Bool {
        recorded.ownerIsCertain && (refined == recorded.description || (recorded == .mutex && refined == "condition"))
    }
}

/// Follows owner chains through a snapshot.
enum OwnerChain {
    /// What one thread waits for, as a link of the chain.
    struct Wait: Equatable {
        /// The object it waits on (futex address).
        var object: UInt64
        /// The thread that holds it.
        var owner: Int32
    }

    /// The deadlock cycle reached from `start` (which waits for `first`): the threads in order, each waiting for
    /// the next, the last for the first; nil when the chain ends (an owner that waits for nothing known) or
    /// runs past `limit` threads.
    static func cycle(from start: Int32, first: Wait, waits: [Int32: Wait], limit: Int = 32) -> [(tid: Int32, wait: Wait)]? {
        var chain: [(tid: Int32, wait: Wait)] = [(start, first)]
        var owner = first.owner
        while chain.count <= limit {
            if let index = chain.firstIndex(where: { $0.tid == owner }) { return Array(chain[index...]) }
            guard let next = waits[owner] else { return nil }
            chain.append((owner, next))
            owner = next.owner
        }
        return nil
    }
}
