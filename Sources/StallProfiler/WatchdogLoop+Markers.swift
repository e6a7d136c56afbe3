import CStallCapture
import StallFormat

extension WatchdogLoop {
    /// Moves the app's markers from the ring into the capture (on the watchdog thread, at every step), then, when
    /// the ring was full meanwhile, a `dropped` marker record with how many were lost. Events older than
    /// `sinceNs` (published after an earlier watchdog's last drain) are not this capture's.
    func drainMarkers(sinceNs: UInt64) {
        let ring = MarkerRing.shared
        ring.drain { record in
            if record.timestampNs >= sinceNs { writer.append(.marker(record)) }
        }
        let lost = ring.dropped.exchange(0, ordering: .relaxed)
        if lost > 0 {
            writer.append(.marker(MarkerRecord(
                kind: .dropped, spanID: lost, threadID: 0, timestampNs: stallcap_monotonic_ns(), name: "")))
        }
    }
}
