import CStallCapture
import StallFormat

/// The cooperative pool's episodes (``StallTarget/cooperativePool(threshold:priority:)``): its detector is the one
/// of any target, but a starvation has one episode per pool thread, each sampled, told busy or blocked and probed
/// for its wait like a stall of the main thread. The episodes are the pool target's ``WatchedTarget/members``, made
/// when the starvation is declared (and for a worker that takes work while it lasts, looked for once a second) and
/// dropped when it ends; all carry the pool's name and share its answers (an answered ping ends every one).
extension WatchdogLoop {
    /// Least time between two looks for pool threads during one starvation, nanoseconds.
    static let poolLookIntervalNs: UInt64 = 1_000_000_000
    /// Most members sampled at one round: each of a busy member's samples waits for its thread's answer (2-4 ms
    /// measured), so on a machine of many CPUs the members are sampled in turns, a few per round, and the other
    /// targets' checks are not held up.
    static let poolSamplesPerRound = 8

    /// Declares the starvation `stallID` of `pool` (code `code`), begun at `startNs`: every worker of the pool's
    /// root queue that runs work now (its first sample says: ``PoolThreads``) gets an episode, the first numbered
    /// `stallID`. When none does (no stack could be read), the thread that answered last is sampled, so the
    /// starvation is not lost. A ping answered meanwhile ends the look: nothing that ran after it is the
    /// starvation's (and with no member yet, there is none to write).
    func beginStarvation(_ pool: WatchedTarget, code: PoolThreads.Code, stallID: UInt32, startNs: UInt64, latestThread: Int32) {
        lookForPoolThreads(pool, code: code, stallID: stallID, startNs: startNs)
        // (No thread answered yet, from a pool starved since the watchdog started: nothing to fall back on.)
        guard pool.members.isEmpty, !pool.pingAnswered, latestThread > 0 else { return }
        let member = pool.makeMember()
        member.threads = pool.threads
        begin(member, of: pool, stallID: stallID, startNs: startNs, latestThread: latestThread)
    }

    /// Gives an episode begun at `startNs` to every worker of the pool's root queue that runs work now and has none
    /// (the first numbered `stallID` when there is none yet).
    private func lookForPoolThreads(_ pool: WatchedTarget, code: PoolThreads.Code, stallID: UInt32, startNs: UInt64) {
        pool.poolLookedNs = stallcap_monotonic_ns()
        let known = Set(pool.members.compactMap { $0.episode.sampler?.threadID })
        for tid in PoolThreads.workers(code, excluding: known.union([runLoopWait.mainThread, stallcap_gettid()])) {
            if pool.pingAnswered { return }
            let member = pool.makeMember()
            let sampler = EpisodeSampler(
                episodeID: 0, threadID: tid, timing: pool.timing, maxFrames: configuration.maxFrames)
            // One answer now, not a pipelined request: the stack tells whether the worker runs work. Without one (a
            // loaded machine: it waited for a CPU past the request's time), a worker on a run queue runs work: an
            // idle one sleeps in its wait for work.
            sampler.pipelining(alone: false)
            let first = sampler.sample()
            // Answered before this sample: the starvation had ended, and the stack is not its.
            if pool.pingAnswered, first.map({ pool.answers.answeredAt.load(ordering: .relaxed) < $0.timestampNs }) ?? true {
                return
            }
            if let first {
                guard code.runsWork(first) else { continue }
            } else if !MainQueueThreads.isRunnable(tid) {
                continue
            }
            let presamples = Presamples(sampler: sampler, capacity: 1)
            if let first { presamples.keep(first) }
            member.episode = .presampling(presamples)
            begin(member, of: pool, stallID: stallID, startNs: startNs)
        }
    }

    /// Begins `member`'s episode of the starvation `stallID` (its first member's number; the others take their own).
    private func begin(
        _ member: WatchedTarget, of pool: WatchedTarget, stallID: UInt32, startNs: UInt64, latestThread: Int32 = 0
    ) {
        let id = pool.members.isEmpty ? stallID : episodeIDs.take()
        member.takesSnapshots = pool.members.isEmpty
        pool.members.append(member)
        beginStall(member, stallID: id, startNs: startNs, latestThread: latestThread, counted: pool.members.count == 1)
    }

    /// Samples the threads of `pool`'s starvation in progress, at most ``poolSamplesPerRound`` in turn; once a
    /// second, first looks for workers that took work since (their episodes begin now: they joined then).
    func sampleStarvation(_ pool: WatchedTarget) {
        guard !pool.pingAnswered else { return }  // ended: the detector's next step ends the episodes
        if let code = pool.pool, let stallID = pool.detector.stallID,
            stallcap_monotonic_ns() &- pool.poolLookedNs >= Self.poolLookIntervalNs
        {
            lookForPoolThreads(pool, code: code, stallID: stallID, startNs: stallcap_monotonic_ns())
        }
        let count = pool.members.count
        for k in 0..<min(count, Self.poolSamplesPerRound) { sampleStall(pool.members[(pool.nextMember + k) % count]) }
        pool.nextMember = count == 0 ? 0 : (pool.nextMember + Self.poolSamplesPerRound) % count
        pool.detector.sampleEnded(atNs: stallcap_monotonic_ns())
    }

    /// Ends every episode of `pool`'s starvation at `endNs`.
    func endStarvation(_ pool: WatchedTarget, endNs: UInt64) {
        for member in pool.members { endEpisode(member, endNs: endNs) }
        pool.members.removeAll()
    }
}
