import CStallCapture
import Foundation
import StallFormat
import Testing

@testable import StallProfiler

/// The marker ring on rings of the tests' own (the shared one belongs to whichever watchdog runs in this process).
@Suite struct MarkerRingTests {
    func push(_ ring: MarkerRing, _ name: String, kind: MarkerRecord.Kind = .instant, span: UInt64 = 0) {
        StallMarker.withName(name) { ring.push(kind: kind, spanID: span, name: $0) }
    }

    func drained(_ ring: MarkerRing) -> [MarkerRecord] {
        var records: [MarkerRecord] = []
        ring.drain { records.append($0) }
        return records
    }

    @Test func aFullRingDropsAndCountsAndNeverBlocks() {
        let ring = MarkerRing(capacity: 8)
        for index in 0..<11 { push(ring, "m\(index)") }
        #expect(ring.dropped.load(ordering: .relaxed) == 3)
        let first = drained(ring)
        #expect(first.map(\.name) == (0..<8).map { "m\($0)" })
        // Slots handed back are reused, in order, across the wrap.
        for index in 0..<5 { push(ring, "n\(index)", kind: .begin, span: UInt64(index + 1)) }
        let second = drained(ring)
        #expect(second.map(\.name) == (0..<5).map { "n\($0)" })
        #expect(second.map(\.spanID) == [1, 2, 3, 4, 5] && second.allSatisfy { $0.kind == .begin })
        #expect(drained(ring).isEmpty)
    }

    /// A producer that refills the ring as fast as the watchdog reads it cannot keep the watchdog in a drain.
    @Test func aDrainReadsAtMostOneRingsWorth() {
        let ring = MarkerRing(capacity: 8)
        for index in 0..<8 { push(ring, "m\(index)") }
        var read = 0
        ring.drain { _ in
            read += 1
            push(ring, "refill")  // the slot just read is handed back only after this: it goes to the next one
        }
        #expect(read == 8)
        #expect(drained(ring).count == 7, "the refills wait for the next drain (one was dropped: the ring was full)")
        #expect(ring.dropped.load(ordering: .relaxed) == 1)
    }

    @Test func eventsCarryTheThreadsKernelTidAndTheMonotonicClock() throws {
        let ring = MarkerRing(capacity: 4)
        let before = stallcap_monotonic_ns()
        push(ring, "here")
        let record = try #require(drained(ring).first)
        #expect(record.threadID == stallcap_gettid())
        #expect(record.timestampNs >= before && record.timestampNs <= stallcap_monotonic_ns())
    }

    @Test func concurrentProducersLoseNothingUncountedAndKeepTheirOrder() async {
        let ring = MarkerRing(capacity: 64)
        let producers = 4, each = 5_000
        let consumer = Task.detached { () -> [MarkerRecord] in
            var records: [MarkerRecord] = []
            while records.count + Int(ring.dropped.load(ordering: .relaxed)) < producers * each {
                ring.drain { records.append($0) }
                await Task.yield()
            }
            ring.drain { records.append($0) }
            return records
        }
        await withTaskGroup(of: Void.self) { group in
            for producer in 0..<producers {
                group.addTask {
                    for index in 0..<each { StallMarker.withName("p\(producer)") { ring.push(kind: .instant, spanID: UInt64(index), name: $0) } }
                }
            }
        }
        let records = await consumer.value
        #expect(records.count + Int(ring.dropped.load(ordering: .relaxed)) == producers * each)
        for producer in 0..<producers {
            let spans = records.filter { $0.name == "p\(producer)" }.map(\.spanID)
            #expect(spans == spans.sorted(), "one producer's events stay in order")
        }
    }

    @Test func namesAreCutAtAScalarBoundaryWithinTheBound() {
        let ascii = String(repeating: "x", count: 100)
        let accents = String(repeating: "é", count: 40)  // 2 bytes each: 80 bytes
        let emoji = "a" + String(repeating: "🙂", count: 20)  // 1 + 4 x 20 bytes
        for (name, expected) in [(ascii, 63), (accents, 62), (emoji, 61), ("short", 5), ("", 0)] {
            var length = -1
            StallMarker.withName(name) { length = $0.count }
            #expect(length == expected, "\(name.prefix(8))")
            StallMarker.withName(name) { bytes in
                #expect(String(validating: Array(bytes), as: UTF8.self) != nil, "valid UTF-8")
            }
        }
        var literal = ""
        StallMarker.withName("touchDown" as StaticString) { literal = String(decoding: Array($0), as: UTF8.self) }
        #expect(literal == "touchDown")
        StallMarker.withName("é" as StaticString) { literal = String(decoding: Array($0), as: UTF8.self) }
        #expect(literal == "é")
    }

    /// A native string's bytes are read in place: no copy to the heap (the standard library's contiguous path).
    @Test func aNativeStringIsReadInPlace() {
        let built = "built at run time " + String(getpid())
        #expect(built.utf8.withContiguousStorageIfAvailable { $0.count } != nil)
        #expect("small".utf8.withContiguousStorageIfAvailable { $0.count } == 5)
    }
}

