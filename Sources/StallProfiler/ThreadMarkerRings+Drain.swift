import CStallCapture
import StallFormat
import Synchronization

/// The consumer's side: the watchdog thread (or `StallWatchdog.start` while no watchdog thread runs).
extension ThreadMarkerRings {
    /// Hands the events published in every thread's ring to `body` (each ring up to where its producer had got
    /// when the ring's turn came, so a flood cannot keep the watchdog here), then each ring's losses since the last
    /// drain to `lost` (the owner's tid, the count); then the shared ring's events, at most one ring's worth.
    /// `isAlive` is asked about owners only when a thread found no free ring, at most once per
    /// ``freeingIntervalNs``: the rings of exited threads are freed then (after their last events are read).
    func drain(_ body: (MarkerRecord) -> Void, lost report: (Int32, UInt64) -> Void, isAlive: (Int32) -> Bool) {
        published.store(false, ordering: .relaxed)
        let now = stallcap_monotonic_ns()
        let freeing = wanted.load(ordering: .relaxed) && lastFreeingNs.map { now &- $0 >= freeingIntervalNs } ?? true
        if freeing { lastFreeingNs = now }
        var freed = false
        for ring in 0..<threads {
            let owner = rings[ring].owner.load(ordering: .acquiring)
            let exited = freeing && owner != 0 && !isAlive(owner)
            let end = rings[ring].tail.load(ordering: .acquiring)
            var head = rings[ring].head.load(ordering: .acquiring)
            while head < end {
                let record = self.record(ring: ring, position: head)
                let (kept, current) = rings[ring].head.compareExchange(
                    expected: head, desired: head + 1, ordering: .acquiringAndReleasing)
                if kept {
                    body(record)
                    head += 1
                } else {
                    head = current  // its producer took it back meanwhile (and passed it on or counted it)
                }
            }
            rings[ring].spilledAtDrain.store(rings[ring].spilled.load(ordering: .relaxed), ordering: .relaxed)
            let lostSoFar = rings[ring].lost.load(ordering: .relaxed)
            if lostSoFar != lostReported[ring] {
                report(owner, lostSoFar &- lostReported[ring])
                lostReported[ring] = lostSoFar
            }
            if exited {
                rings[ring].owner.store(0, ordering: .releasing)
                freed = true
            }
        }
        if freed {
            wanted.store(false, ordering: .relaxed)  // a thread still without a ring sets it again
            generation.add(1, ordering: .releasing)
        }
        overflow.drain(body)
    }

    /// The event at `position` of ring `ring`, as read now (valid only if the head is still there afterwards).
    private func record(ring: Int, position: UInt64) -> MarkerRecord {
        let event = Event(slot(ring: ring, position: position))
        let name = event.withName { String(decoding: $0, as: UTF8.self) }
        return MarkerRecord(
            kind: MarkerRecord.Kind(rawValue: event.kind) ?? .instant, spanID: event.spanID, threadID: event.tid,
            timestampNs: event.timestampNs, name: name)
    }

    /// Starts recording for a new watchdog: discards what an earlier one left in every ring and its loss counts,
    /// then lets markers in (``MarkerRing/start()``). Rings stay with their threads.
    func start() {
        drain({ _ in }, lost: { _, _ in }, isAlive: { _ in true })
        overflow.start()
    }

    /// In the child of a fork, where only the forking thread exists (its ring word is reset by `marker.c`): every
    /// ring is free and empty again, and so is the shared ring.
    func resetInChild() {
        for ring in 0..<threads {
            rings[ring].owner.store(0, ordering: .relaxed)
            rings[ring].head.store(rings[ring].tail.load(ordering: .relaxed), ordering: .relaxed)
            lostReported[ring] = rings[ring].lost.load(ordering: .relaxed)
            rings[ring].spilledAtDrain.store(rings[ring].spilled.load(ordering: .relaxed), ordering: .relaxed)
        }
        generation.add(1, ordering: .relaxed)
        overflow.resetInChild()
    }
}
