import Foundation
import Testing

@testable import StallFormat

/// The image contents record (type 12): bytes as docs/FORMAT.md gives them, read back into the capture once, a
/// size over the limit refused with its position.
@Suite struct ImageContentsRecordTests {
    static let record = ImageContentsRecord(address: 0x7ff0_0000_1000, path: "v", bytes: [0x7f, 0x45])

    @Test func theRecordsBytesAreTheDocumentedOnes() {
        var bytes: [UInt8] = []
        CaptureRecord.imageContents(Self.record).encode(into: &bytes)
        let payload: [UInt8] = [0, 0x10, 0, 0, 0xf0, 0x7f, 0, 0] + [1, 0, 0, 0, 0x76] + [2, 0, 0, 0, 0x7f, 0x45]
        #expect(bytes[0] == 12)
        #expect(Array(bytes[5..<(bytes.count - 4)]) == payload)
    }

    @Test func itReadsBackOnceIntoTheCapture() throws {
        var records = CaptureRoundTripTests.sampleRecords()
        records.insert(contentsOf: [.imageContents(Self.record), .imageContents(Self.record)], at: 1)
        let bytes = CaptureRoundTripTests.encoded(records)
        #expect(try CaptureReader.records(bytes, source: "t").records == records)
        let capture = try CaptureReader.parse(bytes, source: "t")
        #expect(capture.imageContents == [Self.record])
    }

    @Test func contentsOverTheLimitAreBadData() {
        var payload: [UInt8] = []
        payload.appendLE(UInt64(1))
        payload.appendString("v")
        payload.appendBytes([UInt8](repeating: 0, count: ImageContentsRecord.maxBytes + 1))
        let bytes = CaptureFormat.header + ThreadsRecordTests.framed(type: 12, payload)
        do {
            _ = try CaptureReader.parse(bytes, source: "big.stalls")
            Issue.record("an oversized image contents record was accepted")
        } catch {
            // The position is where the bytes field starts: header (16), type and length (5), address (8), path (5).
            #expect("\(error)".contains("big.stalls: byte 34: image contents of"), "\(error)")
        }
    }
}
