import Foundation
import Testing

@testable import StallFormat

/// The threads record (type 11) and the blocked-on record's queue label: bytes as docs/FORMAT.md gives them,
/// read back, attached to their episode; older and newer writers' records still read.
@Suite struct ThreadsRecordTests {
    static let thread = ThreadState(
        tid: 7, name: "w", state: UInt8(ascii: "S"), syscall: 202, waitKind: .dispatchSync, object: 0x10, ownerTID: 9,
        cpuNs: 5, flags: .fromStackMemory, detail: "", queueLabel: "q", frames: [0xAA])

    /// The payload written out by hand from docs/FORMAT.md, not by the encoder.
    static let payload: [UInt8] =
        [1, 0, 0, 0] + [2, 0, 0, 0, 0, 0, 0, 0] + [1] + [3, 0, 0, 0] + [1, 0, 0, 0]  // id, time, phase, total, count
        + [7, 0, 0, 0] + [0x53] + [202, 0, 0, 0] + [4] + [0x10, 0, 0, 0, 0, 0, 0, 0]  // tid, state, call, kind, object
        + [9, 0, 0, 0] + [5, 0, 0, 0, 0, 0, 0, 0] + [2, 0, 0, 0]  // owner, cpu, flags
        + [1, 0, 0, 0, 0x77] + [0, 0, 0, 0] + [1, 0, 0, 0, 0x71]  // name "w", detail "", label "q"
        + [1, 0, 0, 0] + [0xAA, 0, 0, 0, 0, 0, 0, 0]  // frames

    @Test func theRecordsBytesAreTheDocumentedOnes() throws {
        let record = ThreadsRecord(stallID: 1, timestampNs: 2, phase: .snapshot, totalThreads: 3, threads: [Self.thread])
        var bytes: [UInt8] = []
        CaptureRecord.threads(record).encode(into: &bytes)
        #expect(bytes[0] == 11)
        #expect(Array(bytes[5..<(5 + Self.payload.count)]) == Self.payload)
        #expect(bytes.count == 5 + Self.payload.count + 4)
    }

    @Test func snapshotsAndTheQueueLabelReadBackOntoTheirEpisode() throws {
        let snapshot = ThreadsRecord(stallID: 1, timestampNs: 2, phase: .snapshot, totalThreads: 3, threads: [Self.thread])
        let reading = ThreadsRecord(
            stallID: 1, timestampNs: 9, phase: .cpu, totalThreads: 1, threads: [ThreadState(tid: 7, cpuNs: 8)])
        let blocked = BlockedOnRecord(
            stallID: 1, timestampNs: 3, waitKind: .dispatchSync, syscall: 202, argument: 0x10, ownerTID: 9,
            queueLabel: "com.example.db")
        var records = CaptureRoundTripTests.sampleRecords()
        records.insert(contentsOf: [.blockedOn(blocked), .threads(snapshot), .threads(reading)], at: 5)
        let bytes = CaptureRoundTripTests.encoded(records)
        let parsed = try CaptureReader.records(bytes, source: "t").records
        #expect(parsed == records)
        let capture = try CaptureReader.parse(bytes, source: "t")
        let stall = try #require(capture.stalls.first)
        #expect(stall.threads == [snapshot, reading])
        #expect(stall.blockedOn?.queueLabel == "com.example.db")
        #expect(stall.blockedOn?.waitKind.ownerIsCertain == true)
    }

    @Test func anOlderBlockedOnRecordHasNoLabelAndANewerKindReadsAsUnknown() throws {
        var record = BlockedOnRecord(stallID: 1, timestampNs: 3, waitKind: .futex, syscall: 202)
        var bytes: [UInt8] = []
        CaptureRecord.blockedOn(record).encode(into: &bytes)
        // Drop the label (4 bytes of length 0) as a writer before it did, and fix the length and CRC.
        let payload = Array(bytes[5..<(bytes.count - 8)])
        let older = Self.framed(type: 7, payload)
        let parsed = try CaptureReader.records(CaptureFormat.header + older, source: "t").records
        #expect(parsed == [.blockedOn(record)])
        var newer = payload
        newer[12] = 200  // the wait kind byte: stallID (4) and timestampNs (8) come first
        record.waitKind = .unknown
        let read = try CaptureReader.records(CaptureFormat.header + Self.framed(type: 7, newer), source: "t").records
        #expect(read == [.blockedOn(record)])
    }

    /// A record with its type, length and CRC.
    static func framed(type: UInt8, _ payload: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = [type]
        bytes.appendLE(UInt32(payload.count))
        bytes += payload
        let crc = bytes.withUnsafeBytes { CRC32.checksum($0) }
        bytes.appendLE(crc)
        return bytes
    }
}
