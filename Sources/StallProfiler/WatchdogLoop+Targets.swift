import CStallCapture
import StallFormat

/// The targets watched besides the main queue (``StallTarget``): each is stepped like the main queue. An executor's
/// check is answered without a ping while its thread sleeps still in its loop's learned wait (``RunLoopWait``); a
/// serial queue's checks are pings (its work runs on any worker). Executors take part in the deep sleep
/// (WatchdogLoop+DeepTargets.swift); a serial queue or the pool keeps the watchdog checking every interval.
extension WatchdogLoop {
    /// True when `predicate` holds for the main queue, another target or a member of the pool's starvation.
    func anyTarget(_ predicate: (WatchedTarget) -> Bool) -> Bool {
        predicate(main) || others.contains { predicate($0) || $0.members.contains(where: predicate) }
    }

    /// Starts watching `target`.
    func add(_ target: StallTarget) {
        var configuration = self.configuration
        configuration.threshold = target.threshold
        // Saturation needs a thread of the target's own: a serial queue's latest worker runs other queues' work.
        if !target.hasOwnThread { configuration.saturationPeriod = nil }
        let watched = WatchedTarget(
            name: target.name, timing: WatchdogTiming(configuration), maxFrames: configuration.maxFrames,
            // The pool's queue is a concurrent one: it has no drain lock to read.
            answers: PingAnswers(reading: target.hasOwnThread || target.pool != nil ? .nothing : .currentQueue),
            episodeIDs: episodeIDs, hasOwnThread: target.hasOwnThread, pool: target.pool, post: target.post)
        // The pool's threads are found when it starves: a pool starved from the start is seen too.
        watched.detector.stallsBeforeAnAnswer = target.pool != nil
        if target.hasOwnThread { watched.watchSlot = freeWatchSlot() }
        others.append(watched)
        alignPings()
    }

    /// Lets every target's ping go out up to a quarter of its period early while several are watched, so that
    /// pings due close together share one wake of the watchdog (each wake costs more than a ping); exactly on time
    /// for the main queue alone, whose deep sleep depends on it.
    private func alignPings() {
        for target in [main] + others {
            target.detector.pingSlackNs = others.isEmpty ? 0 : target.detector.pingPeriodNs / 4
        }
    }

    /// Takes the targets the app added or removed since the last step (``StallWatchdog/add(_:)``), when their lock
    /// is free: the app may hold it, and the watchdog never waits on the app.
    func takeTargetChanges() {
        guard shared.targetsChanged.load(ordering: .acquiring) else { return }
        guard let changes = shared.targetChanges.withLockIfAvailable({ changes in
            shared.targetsChanged.store(false, ordering: .releasing)
            defer { changes.removeAll() }
            return changes
        }) else { return }
        for change in changes {
            switch change {
            case .add(let target): add(target)
            case .remove(let name):
                guard let index = others.firstIndex(where: { $0.name == name }) else { continue }
                endEpisode(others[index], endNs: stallcap_monotonic_ns())
                endStarvation(others[index], endNs: stallcap_monotonic_ns())
                if others[index].watchSlot > 0 { stallcap_wd_unwatch_target(others[index].watchSlot) }
                others.remove(at: index)
                alignPings()
            }
        }
        releaseDeepSleep()  // a new target is checked before the watchdog sleeps deeply
    }

    /// Steps every target but the main queue at this step's time: its answer, its detector's actions and its
    /// saturation. `pausedNs` is the time the process was stopped since the previous step.
    func stepOthers(pausedNs: UInt64, actions: inout [StallDetector.Action]) {
        for target in others {
            // No clock is read ahead for them: a quiet check reads it (and saturation's check this step shares it),
            // else saturation reads it when its check is due.
            target.tickCPU = nil
            let answer = target.takeAnswer()
            step(target, nowNs: stallcap_monotonic_ns(), answer: answer, pausedNs: pausedNs, actions: &actions)
        }
    }

    /// Steps `target`'s detector at `nowNs` with `answer` (its latest answered ping, if any) and `pausedNs` (the
    /// time the process was stopped since the previous step), does what it asks, then its saturation. A ping
    /// answered quietly is taken at once (a second step at the same time), so the loop sleeps a whole check
    /// interval, not half of one (the presampling wake of an outstanding ping).
    func step(
        _ target: WatchedTarget, nowNs: UInt64, answer: StallDetector.Answer?, pausedNs: UInt64,
        actions: inout [StallDetector.Action]
    ) {
        var answer = answer, paused = pausedNs
        repeat {
            actions.removeAll(keepingCapacity: true)
            target.detector.step(nowNs: nowNs, answer: answer, pausedNs: paused, into: &actions)
            paused = 0
            for action in actions { perform(action, target) }
            answer = target.quietAnswer
            target.quietAnswer = nil
        } while answer != nil
        stepSaturation(target)
    }
}
