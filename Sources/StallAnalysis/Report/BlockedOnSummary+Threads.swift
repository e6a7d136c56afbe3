import StallFormat

/// Every thread in view: a blocked episode's snapshots read into thread summaries, candidates for a wait nobody
/// owns, deadlock cycles and the self-wait hint (docs/REPORT.md).
extension BlockedOnSummary {
    /// Least CPU a thread must use during an episode to count as having run, milliseconds.
    static let ranCPUMs = 1.0
    /// Most candidates listed for a wait without a known owner.
    static let maxCandidates = 5

    /// Reads `stall`'s thread snapshots (none in older captures): fills ``threads``, ``threadsTotal``,
    /// ``othersRan``, the candidates of ``waitsFor`` for waits without an owner, and ``deadlock``.
    mutating func addThreads(
        of stall: Stall, record: BlockedOnRecord, symbolizer: Symbolizer, rule: AppCodeRule,
        architecture: SyscallNames.Architecture
    ) {
        guard let first = stall.threads.first(where: { $0.phase == .snapshot }) else { return }
        let waiter = stall.begin.threadID
        // CPU during the episode: from the earliest reading (taken at its detection, or the first snapshot) to the
        // last (at its end, or the last snapshot); a thread born after the earliest counts from the first snapshot.
        let earliest = stall.threads.first ?? first
        let last = stall.threads.last.flatMap { $0 == earliest ? nil : $0 }
        let byTid = { (record: ThreadsRecord?) in
            Dictionary(record?.threads.map { ($0.tid, $0.cpuNs) } ?? [], uniquingKeysWith: { a, _ in a })
        }
        let startCPU = byTid(earliest), lastCPU = byTid(last)
        threadsTotal = max(Int(first.totalThreads), first.threads.count)
        var summaries: [ThreadSummary] = first.threads.map { thread in
            let names = symbolizer.rootFirstNames(leafFirst: thread.frames)
            let places = symbolizer.rootFirstPlaces(leafFirst: thread.frames)
            let base = startCPU[thread.tid] ?? thread.cpuNs
            let cpu = last == nil ? nil : lastCPU[thread.tid].map { Double($0 &- min($0, base)) / 1e6 }
            return ThreadSummary(
                tid: Int(thread.tid), name: thread.name, state: thread.stateLetter,
                syscall: thread.syscall >= 0 ? SyscallNames.name(Int(thread.syscall), architecture: architecture) : nil,
                detail: thread.detail,
                waitKind: WaitFrames.refine(thread.waitKind, leafFirst: Array(names.reversed())),
                cpuMs: cpu, stack: names, stackPlaces: places,
                frame: Self.frame(thread.frames, names: names, places: places, rule: rule), why: "")
        }
        // A thread running at the snapshot ran, unless the readings show it used next to no CPU during the episode
        // (a pool thread going back to sleep).
        let ran: (ThreadSummary) -> Bool = { $0.cpuMs.map { $0 >= Self.ranCPUMs } ?? ($0.detail == "running") }
        let others = summaries.filter { $0.tid != Int(waiter) }
        othersRan = last == nil && !others.contains(where: ran) ? nil : others.contains(where: ran)
        findDeadlock(first, waiter: waiter, record: record, summaries: summaries)
        let channel = Self.kernelObjects(detail)  // the waiter's pipe or socket ends
        if waitsFor.isEmpty, ["semaphore", "group", "condition", "futex", "io"].contains(kind) {
            waitsFor = Self.candidates(others, ran: ran, channel: channel).prefix(Self.maxCandidates).map {
                WaitedThread(tid: $0.tid, name: $0.name, state: $0.syscall.map { "in \($0)" } ?? "running",
                             certain: false, stack: $0.stack, stackPlaces: $0.stackPlaces, frame: $0.frame)
            }
        }
        // The threads that matter first: the owner chain, the candidates, threads that ran, threads on the same
        // object; then the rest, in /proc's order.
        let chain = Set(deadlock.map(\.tid) + waitsFor.filter(\.certain).map(\.tid))
        let candidates = Set(waitsFor.filter { !$0.certain }.map(\.tid))
        for index in summaries.indices {
            let thread = first.threads[index]
            summaries[index].why =
                summaries[index].tid == Int(waiter) ? "waiting" :
                chain.contains(summaries[index].tid) ? (deadlock.isEmpty ? "owner" : "deadlock") :
                candidates.contains(summaries[index].tid) ? "candidate" :
                ran(summaries[index]) ? "ran" :
                (thread.object != 0 && thread.object == record.argument && thread.waitKind == record.waitKind)
                    || !channel.isDisjoint(with: Self.kernelObjects(thread.detail))
                    ? "same object" : ""
        }
        let order = ["waiting", "deadlock", "owner", "candidate", "ran", "same object", ""]
        threads = summaries.enumerated().sorted {
            (order.firstIndex(of: $0.element.why)!, $0.offset) < (order.firstIndex(of: $1.element.why)!, $1.offset)
        }.map(\.element)
    }

    /// Candidates for the thread that ends a wait without an owner, best first: threads on the same pipe or
    /// socket as the waiter (`object`, its other end within the process), then threads that ran during the
    /// episode (most CPU first), then threads sleeping in I/O on a descriptor, then threads sleeping in a timed
    /// sleep. Threads parked in poll or epoll (idle event loops) and threads waiting on futexes are left out.
    static func candidates(
        _ threads: [ThreadSummary], ran: (ThreadSummary) -> Bool, channel: Set<String> = []
    ) -> [ThreadSummary] {
        let idleWaits: Set<String> = ["poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait", "epoll_pwait2"]
        func rank(_ thread: ThreadSummary) -> Int? {
            if !channel.isEmpty, !channel.isDisjoint(with: kernelObjects(thread.detail)) { return -1 }
            if ran(thread) { return 0 }
            if thread.waitKind == "io", !idleWaits.contains(thread.syscall ?? "") { return 1 }
            if thread.waitKind == "sleep" { return 2 }
            return nil
        }
        return threads.compactMap { thread in rank(thread).map { (thread, $0) } }
            .sorted { ($0.1, -($0.0.cpuMs ?? 0)) < ($1.1, -($1.0.cpuMs ?? 0)) }.map(\.0)
    }

    /// The pipes and sockets a call's detail names (`pipe:[1234]`, `socket:[99]`, a socket's peer): two threads
    /// whose sets meet are on one channel (its two ends, or the same side).
    static func kernelObjects(_ detail: String) -> Set<String> {
        var objects: Set<String> = []
        for kind in ["pipe:[", "socket:["] {
            var rest = detail[...]
            while let start = rest.firstRange(of: kind), let end = rest[start.upperBound...].firstIndex(of: "]") {
                objects.insert(String(rest[start.lowerBound...end]))
                rest = rest[rest.index(after: end)...]
            }
        }
        return objects
    }

    /// Follows the owner chain from the waiting thread through the first snapshot; a chain that returns to a
    /// thread already in it is a deadlock.
    private mutating func findDeadlock(
        _ snapshot: ThreadsRecord, waiter: Int32, record: BlockedOnRecord, summaries: [ThreadSummary]
    ) {
        guard record.ownerTID > 0, WaitFrames.keepsOwner(record.waitKind, refined: kind) else { return }
        var waits: [Int32: OwnerChain.Wait] = [:]
        let refined = Dictionary(summaries.map { ($0.tid, $0.waitKind) }, uniquingKeysWith: { a, _ in a })
        for thread in snapshot.threads where thread.ownerTID > 0
            && WaitFrames.keepsOwner(thread.waitKind, refined: refined[Int(thread.tid)] ?? "")
        {
            waits[thread.tid] = OwnerChain.Wait(object: thread.object, owner: thread.ownerTID)
        }
        let start = OwnerChain.Wait(object: record.argument, owner: record.ownerTID)
        waits[waiter] = start
        guard let cycle = OwnerChain.cycle(from: waiter, first: start, waits: waits) else { return }
        let byTid = Dictionary(summaries.map { ($0.tid, $0) }, uniquingKeysWith: { a, _ in a })
        deadlock = cycle.indices.map { index in
            let (tid, wait) = cycle[index]
            let previous = cycle[(index + cycle.count - 1) % cycle.count].wait
            let summary = byTid[Int(tid)]
            return DeadlockLink(
                tid: Int(tid), name: tid == waiter ? "main" : summary?.name ?? "", holds: previous.object, wants: wait.object,
                frame: summary?.frame)
        }
    }

    /// `deadlock: main (wants 0x1 held by db-worker) -> db-worker (wants 0x2 held by main)`; nil without one.
    public var deadlockSentence: String? {
        guard !deadlock.isEmpty else { return nil }
        let links = deadlock.indices.map { index -> String in
            let link = deadlock[index], next = deadlock[(index + 1) % deadlock.count]
            return "\(Self.threadName(link)) (wants 0x\(String(link.wants, radix: 16)) held by \(Self.threadName(next)))"
        }
        return "deadlock: " + links.joined(separator: " -> ")
    }

    private static func threadName(_ link: DeadlockLink) -> String {
        link.name.isEmpty ? "thread \(link.tid)" : "\(link.name) [\(link.tid)]"
    }

    /// The self-wait hint: a semaphore, group or condition wait while no other thread ran during the episode, none
    /// sits in I/O or a timed sleep (a candidate), and the snapshot saw every thread.
    var selfWaitHint: ReportHint? {
        guard ["semaphore", "group", "condition"].contains(kind), othersRan == false, waitsFor.isEmpty,
            threads.count >= threadsTotal
        else { return nil }
        return ReportHint(kind: "self-wait", text: "nothing else is running: if what the main thread waits for needs "
            + "the main queue or the main actor, this is a self-deadlock")
    }
}
