import Foundation
import Testing

@testable import StallFormat

/// App markers (type 9): round trip, pairing of begins and ends, and files without them.
@Suite struct MarkerRecordTests {
    static let process = CaptureRecord.process(ProcessRecord(
        pid: 7, startMonotonicNs: 1_000, startWallNs: 5, thresholdNs: 250, sampleIntervalNs: 10, executable: "/app"))

    static func records() -> [CaptureRecord] {
        [
            process,
            .marker(MarkerRecord(kind: .instant, threadID: 7, timestampNs: 2_000, name: "touchDown")),
            .marker(MarkerRecord(kind: .begin, spanID: 1, threadID: 7, timestampNs: 3_000, name: "perform")),
            .stallBegin(StallBeginRecord(stallID: 1, startNs: 3_100, detectedNs: 3_400, threadID: 7)),
            .marker(MarkerRecord(kind: .begin, spanID: 2, threadID: 9, timestampNs: 3_200, name: "never ends")),
            .marker(MarkerRecord(kind: .end, spanID: 1, threadID: 7, timestampNs: 3_600, name: "")),
            .stallEnd(StallEndRecord(stallID: 1, endNs: 3_700, cpuNs: 500, measuredNs: 600, state: .busy,
                                     sampleCount: 0, missedCount: 0)),
            // Drained after later records: the reader orders markers by time.
            .marker(MarkerRecord(kind: .instant, threadID: 7, timestampNs: 1_500, name: "früh ✓")),
            .marker(MarkerRecord(kind: .end, spanID: 99, threadID: 7, timestampNs: 3_800, name: "")),
            .marker(MarkerRecord(kind: .dropped, spanID: 4, threadID: 0, timestampNs: 3_900, name: "")),
            .close(timestampNs: 4_000),
        ]
    }

    static func encoded(_ records: [CaptureRecord]) -> [UInt8] {
        var bytes = CaptureFormat.header
        for record in records { record.encode(into: &bytes) }
        return bytes
    }

    @Test func markersRoundTripThroughTheWriter() throws {
        let path = NSTemporaryDirectory() + "markers-\(UUID().uuidString).stalls"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try CaptureWriter(path: path)
        for record in Self.records() { writer.append(record) }
        try writer.close()
        let bytes = try CaptureReader.readWholeFile(path)
        #expect(bytes[8] == CaptureFormat.version, "markers need no new version")
        let (records, warning) = try CaptureReader.records(bytes, source: path)
        #expect(warning == nil)
        #expect(records == Self.records())
    }

    @Test func beginsAndEndsArePairedAndOrderedByTime() throws {
        let capture = try CaptureReader.parse(Self.encoded(Self.records()), source: "m")
        #expect(capture.markers == [
            Marker(name: "früh ✓", kind: .instant, startNs: 1_500, tid: 7),
            Marker(name: "touchDown", kind: .instant, startNs: 2_000, tid: 7),
            Marker(name: "perform", kind: .interval, startNs: 3_000, durationNs: 600, tid: 7),
            Marker(name: "never ends", kind: .interval, startNs: 3_200, durationNs: nil, tid: 9),
        ])
        #expect(capture.droppedMarkers == 4)
        #expect(capture.warnings.contains { $0.contains("4 app markers were lost") })
        #expect(capture.stalls.count == 1)
    }

    @Test func capturesWithoutMarkersReadWithNone() throws {
        let plain = Self.records().filter { if case .marker = $0 { return false } else { return true } }
        let capture = try CaptureReader.parse(Self.encoded(plain), source: "plain")
        #expect(capture.markers.isEmpty)
        #expect(capture.droppedMarkers == 0)
        #expect(capture.warnings.isEmpty)
        // A version 1 header with the same records reads too (markers are a record type, not a layout change).
        var old = Self.encoded(Self.records())
        old[8] = 1
        #expect(try CaptureReader.parse(old, source: "v1").markers.count == 4)
    }

    @Test func aMarkerCutByAKillReadsUpToTheRecordBefore() throws {
        let full = Self.encoded(Array(Self.records().prefix(3)))
        let complete = Self.encoded(Array(Self.records().prefix(2)))
        for cut in complete.count + 1..<full.count {
            let capture = try CaptureReader.parse(Array(full[0..<cut]), source: "cut")
            #expect(capture.markers.map(\.name) == ["touchDown"])
            #expect(capture.warnings.count == 1)
        }
    }

    @Test func anUnknownMarkerKindIsAnErrorWithItsOffset() throws {
        var bytes = CaptureFormat.header
        CaptureRecord.marker(MarkerRecord(kind: .instant, threadID: 1, timestampNs: 1, name: "x")).encode(into: &bytes)
        let kindIndex = 16 + 5
        bytes[kindIndex] = 7
        let crc = bytes.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[16..<(bytes.count - 4)])) }
        withUnsafeBytes(of: crc.littleEndian) { for k in 0..<4 { bytes[bytes.count - 4 + k] = $0[k] } }
        let error = try #require(throws: CaptureFormatError.self) { try CaptureReader.parse(bytes, source: "kind") }
        #expect(error.reason.contains("marker kind 7"))
    }

    /// An older reader's rule, which this one shares: a record type it does not know is skipped.
    @Test func anUnknownRecordTypeIsSkipped() throws {
        var bytes = Self.encoded([Self.process])
        let start = bytes.count
        CaptureRecord.marker(MarkerRecord(kind: .instant, threadID: 1, timestampNs: 1, name: "x")).encode(into: &bytes)
        bytes[start] = 200
        let crc = bytes.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[start..<(bytes.count - 4)])) }
        withUnsafeBytes(of: crc.littleEndian) { for k in 0..<4 { bytes[bytes.count - 4 + k] = $0[k] } }
        let capture = try CaptureReader.parse(bytes, source: "unknown")
        #expect(capture.markers.isEmpty)
        #expect(capture.process != nil)
    }
}
