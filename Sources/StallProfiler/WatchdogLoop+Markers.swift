import CStallCapture
import StallFormat

extension WatchdogLoop {
    /// Moves the app's markers from the rings into the capture (on the watchdog thread, at every step), then, for
    /// each thread that lost markers meanwhile, a `dropped` marker record with how many and whose (thread 0: the
    /// threads without a ring of their own). Events older than `sinceNs` (published after an earlier watchdog's
    /// last drain) are not this capture's.
    func drainMarkers(sinceNs: UInt64) {
        let rings = ThreadMarkerRings.shared
        var losses: [(tid: Int32, count: UInt64)] = []
        rings.drain(
            { record in if record.timestampNs >= sinceNs { writer.append(.marker(record)) } },
            lost: { tid, count in losses.append((tid, count)) },
            isAlive: { stallcap_thread_cpu_ns($0) >= 0 })
        let shared = rings.overflow.dropped.exchange(0, ordering: .relaxed)
        if shared > 0 { losses.append((0, shared)) }
        guard !losses.isEmpty else { return }
        let now = stallcap_monotonic_ns()
        for (tid, count) in losses {
            writer.append(.marker(MarkerRecord(kind: .dropped, spanID: count, threadID: tid, timestampNs: now, name: "")))
        }
    }
}
