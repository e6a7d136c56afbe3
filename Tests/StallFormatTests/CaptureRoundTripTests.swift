import Foundation
import Testing

@testable import StallFormat

/// Writer and reader agree; a file cut by a kill reads up to its last complete record; corruption is an error.
@Suite struct CaptureRoundTripTests {
    static func sampleRecords() -> [CaptureRecord] {
        [
            .process(ProcessRecord(pid: 42, startMonotonicNs: 1_000, startWallNs: 1_700_000_000_000_000_000,
                                   thresholdNs: 250_000_000, sampleIntervalNs: 10_000_000, executable: "/usr/bin/app")),
            .image(ImageRecord(path: "/usr/bin/app", loadBias: 0x5555_0000_0000, start: 0x5555_0000_0000,
                               end: 0x5555_0010_0000, buildID: [0xde, 0xad, 0xbe, 0xef])),
            .stallBegin(StallBeginRecord(stallID: 1, startNs: 2_000, detectedNs: 252_000, threadID: 42)),
            .sample(SampleRecord(stallID: 1, timestampNs: 253_000, threadCPUNs: 10, flags: [],
                                 frames: [0x5555_0000_1000, 0x5555_0000_2000])),
            .sample(SampleRecord(stallID: 1, timestampNs: 263_000, threadCPUNs: 11, flags: .repeated, frames: [])),
            .signalMask(SignalMaskRecord(stallID: 1, timestampNs: 270_000, threadID: 42, signal: 27,
                                         blockedMask: 1 << 26 | 1 << 1)),
            .stallEnd(StallEndRecord(stallID: 1, endNs: 300_000, cpuNs: 1, measuredNs: 47_000, state: .blocked,
                                     sampleCount: 2, missedCount: 0)),
            .marker(MarkerRecord(kind: .dropped, spanID: 12, threadID: 43, timestampNs: 350_000, name: "")),
            .close(timestampNs: 400_000),
        ]
    }

    static func encoded(_ records: [CaptureRecord]) -> [UInt8] {
        var bytes = CaptureFormat.header
        for record in records { record.encode(into: &bytes) }
        return bytes
    }

    @Test func writerAndReaderRoundTrip() throws {
        let path = NSTemporaryDirectory() + "roundtrip-\(UUID().uuidString).stalls"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try CaptureWriter(path: path)
        for record in Self.sampleRecords() { writer.append(record) }
        try writer.close()
        let bytes = try CaptureReader.readWholeFile(path)
        #expect(bytes == Self.encoded(Self.sampleRecords()))
        let (records, warning) = try CaptureReader.records(bytes, source: path)
        #expect(records == Self.sampleRecords())
        #expect(warning == nil)

        let capture = try CaptureReader.read(path: path)
        #expect(capture.closedCleanly)
        #expect(capture.images.count == 1)
        #expect(capture.images[0].buildIDHex == "deadbeef")
        let stall = try #require(capture.stalls.first)
        #expect(stall.isFinished)
        #expect(stall.state == .blocked)
        #expect(stall.samples.count == 2)
        // A repeated sample carries the previous stack.
        #expect(stall.samples[1].frames == stall.samples[0].frames)
        #expect(stall.durationNs == 298_000)
        #expect(stall.signalMask?.blocksSignal == true && stall.signalMask?.blockedMask == 1 << 26 | 2)
        #expect(capture.droppedMarkersByThread == [43: 12])
    }

    @Test func everyCutOfTheLastRecordReadsWithAWarning() throws {
        let full = Self.encoded(Array(Self.sampleRecords().prefix(5)))
        let complete = Self.encoded(Array(Self.sampleRecords().prefix(4)))
        for cut in complete.count + 1..<full.count {
            let (records, warning) = try CaptureReader.records(Array(full[0..<cut]), source: "cut.stalls")
            #expect(records.count == 4)
            #expect(warning?.contains("cut.stalls: byte \(complete.count)") == true)
        }
        let capture = try CaptureReader.parse(Array(full.dropLast()), source: "cut.stalls")
        #expect(!capture.closedCleanly)
        #expect(capture.stalls.first?.isFinished == false)
        #expect(capture.stalls.first?.samples.count == 1)
    }

    @Test func unfinishedStallIsClassifiedFromItsSamples() throws {
        var records = Array(Self.sampleRecords().prefix(3))
        records.append(.sample(SampleRecord(stallID: 1, timestampNs: 1_000_000, threadCPUNs: 0, flags: [], frames: [1])))
        records.append(.sample(SampleRecord(stallID: 1, timestampNs: 2_000_000, threadCPUNs: 950_000, flags: [], frames: [1])))
        let capture = try CaptureReader.parse(Self.encoded(records), source: "busy.stalls")
        let stall = try #require(capture.stalls.first)
        #expect(!stall.isFinished)
        #expect(stall.state == .busy)
        #expect(abs((stall.cpuRatio ?? 0) - 0.95) < 1e-9)
    }

    @Test func sharesNeverExceedOne() throws {
        // An end record written before the fix: a 1 ms window with a 10 ms run-queue wait credited in it.
        let begin = StallBeginRecord(stallID: 1, startNs: 0, detectedNs: 250_000_000, threadID: 42)
        let end = StallEndRecord(
            stallID: 1, endNs: 251_000_000, cpuNs: 1_200_000, runQueueNs: 10_000_000, measuredNs: 1_000_000,
            state: .busy, sampleCount: 1, missedCount: 0)
        let stall = Stall(begin: begin, end: end)
        #expect(stall.activeRatio == 1)
        #expect(stall.cpuRatio == 1)
        // An unfinished one measured from its samples.
        let unfinished = Stall(begin: begin, samples: [
            Sample(timestampNs: 1_000_000, threadCPUNs: 0, runQueueNs: 0, flags: [], frames: [1]),
            Sample(timestampNs: 2_000_000, threadCPUNs: 600_000, runQueueNs: 5_000_000, flags: [], frames: [1]),
        ])
        #expect(unfinished.activeRatio == 1)
        #expect(abs((unfinished.cpuRatio ?? 0) - 0.6) < 1e-9)
    }

    @Test func corruptionBeforeTheEndIsAnError() throws {
        var bytes = Self.encoded(Self.sampleRecords())
        bytes[CaptureFormat.headerSize + 10] ^= 0xff
        #expect(throws: CaptureFormatError.self) { try CaptureReader.parse(bytes, source: "bad.stalls") }
        do {
            _ = try CaptureReader.parse(bytes, source: "bad.stalls")
        } catch let error as CaptureFormatError {
            #expect(error.offset == CaptureFormat.headerSize)
            #expect(error.description.hasPrefix("bad.stalls: byte 16: record checksum mismatch"))
        }
    }

    @Test func foreignAndEmptyFilesAreRejected() throws {
        #expect(throws: CaptureFormatError.self) { try CaptureReader.parse([], source: "empty") }
        #expect(throws: CaptureFormatError.self) {
            try CaptureReader.parse(Array("main;foo 1\n".utf8), source: "folded.txt")
        }
        var future = Self.encoded(Self.sampleRecords())
        future[8] = 9
        #expect(throws: CaptureFormatError.self) { try CaptureReader.parse(future, source: "future") }
        let implausible = CaptureFormat.header + [4, 0xff, 0xff, 0xff, 0x7f]
        #expect(throws: CaptureFormatError.self) { try CaptureReader.parse(implausible, source: "len") }
    }

    @Test func unknownRecordTypesAreSkipped() throws {
        var bytes = Self.encoded(Array(Self.sampleRecords().prefix(1)))
        var unknown: [UInt8] = [200]
        unknown.appendLE(UInt32(3))
        unknown += [1, 2, 3]
        let crc = unknown.withUnsafeBytes { CRC32.checksum($0) }
        unknown.appendLE(crc)
        bytes += unknown
        bytes += Self.encoded([.close(timestampNs: 9)]).dropFirst(CaptureFormat.headerSize)
        let (records, _) = try CaptureReader.records(bytes, source: "newer")
        #expect(records.count == 2)
    }
}
