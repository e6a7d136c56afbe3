import CStallCapture
import StallFormat

/// The targets watched besides the main queue (``StallTarget``): each is stepped like the main queue, but every
/// check is a ping (nothing tells an executor idle from outside), and none takes part in the deep sleep, which is
/// off while any is watched.
extension WatchdogLoop {
    /// True when `predicate` holds for the main queue or another target.
    func anyTarget(_ predicate: (WatchedTarget) -> Bool) -> Bool {
        predicate(main) || others.contains(where: predicate)
    }

    /// Starts watching `target`.
    func add(_ target: StallTarget) {
        var configuration = self.configuration
        configuration.threshold = target.threshold
        // Saturation needs a thread of the target's own: a serial queue's latest worker runs other queues' work.
        if !target.hasOwnThread { configuration.saturationPeriod = nil }
        others.append(WatchedTarget(
            name: target.name, timing: WatchdogTiming(configuration), maxFrames: configuration.maxFrames,
            answers: PingAnswers(reading: target.hasOwnThread ? .nothing : .currentQueue), episodeIDs: episodeIDs, post: target.post))
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
                others.remove(at: index)
            }
        }
        if !others.isEmpty { releaseDeepSleep() }
    }

    /// Steps every target but the main queue at this step's time: its answer, its detector's actions and its
    /// saturation. `pausedNs` is the time the process was stopped since the previous step.
    func stepOthers(pausedNs: UInt64, actions: inout [StallDetector.Action]) {
        for target in others {
            target.readTickCPU()
            let answer = target.takeAnswer()
            actions.removeAll(keepingCapacity: true)
            target.detector.step(nowNs: stallcap_monotonic_ns(), answer: answer, pausedNs: pausedNs, into: &actions)
            for action in actions { perform(action, target) }
            stepSaturation(target)
        }
    }
}
