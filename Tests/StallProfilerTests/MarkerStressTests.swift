import CStallCapture
import Dispatch
import Foundation
import StallFormat
import Synchronization
import Testing

@testable import StallProfiler

/// Markers from many threads while the watchdog stops and starts. Part of ``WatchdogTests`` (one watchdog at a
/// time).
extension WatchdogTests {
    @Test func markersFromManyThreadsWhileTheWatchdogStopsAndStarts() throws {
        let path = TestSupport.temporaryPath("marker-stress.stalls")
        defer { unlink(path) }
        let stop = Atomic<Bool>(false)
        let calls = Atomic<Int>(0)
        let producers = 4
        let finished = DispatchSemaphore(value: 0)
        for producer in 0..<producers {
            Thread {
                var round = 0
                while !stop.load(ordering: .acquiring) {
                    let span = StallMarker.begin("span \(producer) ünïcødé 🙂 " + String(repeating: "é", count: 40))
                    StallMarker.mark("tick")
                    span.end()
                    round += 1
                    calls.add(3, ordering: .relaxed)
                }
                finished.signal()
            }.start()
        }
        let queue = Self.standIn
        var captures: [Capture] = []
        for _ in 0..<8 {
            var configuration = StallWatchdog.Configuration(
                threshold: .milliseconds(100), sampleInterval: .milliseconds(5), outputPath: path)
            configuration.post = { queue.post($0) }
            let watchdog = try StallWatchdog.start(configuration)
            let before = calls.load(ordering: .relaxed)
            // Generous: producers that never run fail the expectations below, they do not hang the test.
            for _ in 0..<2000 where calls.load(ordering: .relaxed) < before + 3000 { usleep(1000) }
            watchdog.stop()
            let capture = try CaptureReader.read(path: path)
            captures.append(capture)
            // While stopped, markers are no-ops: the ring gets nothing (it is not drained until the next start).
            usleep(20_000)
        }
        stop.store(true, ordering: .releasing)
        for _ in 0..<producers { finished.wait() }
        for capture in captures {
            #expect(capture.closedCleanly)
            #expect(capture.markers.count + Int(capture.droppedMarkers) > 0, "each run recorded markers")
            let start = try #require(capture.process?.startMonotonicNs)
            #expect(capture.markers.allSatisfy { $0.startNs >= start },
                    "no marker from an earlier run")
            #expect(capture.markers.allSatisfy { $0.name.utf8.count <= MarkerRecord.maxNameBytes })
            #expect(capture.markers.allSatisfy { !$0.name.unicodeScalars.contains("\u{FFFD}") }, "cut at a scalar boundary")
        }
    }
}
