import Foundation
import Testing

@testable import StallFormat

/// The writer survives what happens to files in production: log rotation truncating them, a full disk.
@Suite struct CaptureWriterResilienceTests {
    static let process = CaptureRecord.process(ProcessRecord(
        pid: 42, startMonotonicNs: 1_000, startWallNs: 1_700_000_000_000_000_000, thresholdNs: 250_000_000,
        sampleIntervalNs: 10_000_000, executable: "/usr/bin/app"))
    static let image = CaptureRecord.image(ImageRecord(
        path: "/usr/bin/app", loadBias: 0x5555_0000_0000, start: 0x5555_0000_0000, end: 0x5555_0010_0000,
        buildID: [0xde, 0xad]))

    static func sample(_ stall: UInt32, _ time: UInt64) -> CaptureRecord {
        .sample(SampleRecord(stallID: stall, timestampNs: time, threadCPUNs: time, flags: [], frames: [0x5555_0000_1000]))
    }

    static func end(_ stall: UInt32) -> CaptureRecord {
        .stallEnd(StallEndRecord(stallID: stall, endNs: 9_000, cpuNs: 1, measuredNs: 2, state: .busy, sampleCount: 2,
                                 missedCount: 0))
    }

    static func begin(_ stall: UInt32) -> CaptureRecord {
        .stallBegin(StallBeginRecord(stallID: stall, startNs: 1_000, detectedNs: 2_000, threadID: 42))
    }

    @Test func aFileTruncatedByLogRotationStartsAgainAsAValidCapture() throws {
        let path = NSTemporaryDirectory() + "stallprof-truncate-\(UUID().uuidString).stalls"
        defer { unlink(path) }
        let writer = try CaptureWriter(path: path)
        for record in [Self.process, Self.image, Self.begin(1), Self.sample(1, 3_000), Self.end(1), Self.begin(2),
                       Self.sample(2, 4_000)] {
            writer.append(record)
        }
        try writer.flush()
        #expect(truncate(path, 0) == 0)  // what logrotate's copytruncate does
        writer.append(Self.sample(2, 5_000))
        writer.append(Self.end(2))
        writer.append(.close(timestampNs: 10_000))
        try writer.close()
        // The file holds the rest of the run, with what it needs to be read alone: the process and images, and
        // the begin record of the episode still open at the truncation. The ended episode 1 is gone with the
        // rotated part.
        let capture = try CaptureReader.read(path: path)
        #expect(capture.warnings.isEmpty)
        #expect(capture.process?.pid == 42)
        #expect(capture.images.count == 1)
        #expect(capture.stalls.map(\.begin.stallID) == [2])
        #expect(capture.stalls.first?.samples.map(\.timestampNs) == [5_000])
        #expect(capture.stalls.first?.isFinished == true)
        #expect(capture.closedCleanly)
        #expect(writer.restartCount == 1)
    }

    @Test func aFullDiskKeepsWholeRecordsBoundsTheBufferAndRecordsWhatWasDropped() throws {
        let path = NSTemporaryDirectory() + "stallprof-full-\(UUID().uuidString).stalls"
        defer { unlink(path) }
        let writer = try CaptureWriter(path: path)
        writer.pendingLimit = 4096
        writer.append(Self.process)
        writer.append(Self.begin(1))
        try writer.flush()
        // The disk fills up: the next write takes 10 bytes (half a record), then ENOSPC.
        nonisolated(unsafe) var budget = 10
        let realWrite = writer.writeCall
        writer.writeCall = { fd, bytes, count in
            guard budget > 0 else {
                errno = ENOSPC
                return -1
            }
            let written = realWrite(fd, bytes, min(count, budget))
            budget -= written
            return written
        }
        for time in 0..<1_000 { writer.append(Self.sample(1, 3_000 + UInt64(time))) }
        #expect(throws: CaptureWriteError.self) { try writer.flush() }
        #expect(writer.pendingByteCount <= 4096 + 100)
        #expect(writer.droppedSampleCount > 900)
        // Half a record was written, then taken back: the file still reads cleanly.
        let during = try CaptureReader.read(path: path)
        #expect(during.warnings.isEmpty)
        #expect(during.stalls.first?.samples.isEmpty == true)
        // Space again.
        writer.writeCall = realWrite
        writer.append(Self.end(1))
        writer.append(.close(timestampNs: 10_000))
        try writer.close()
        let capture = try CaptureReader.read(path: path)
        #expect(capture.warnings.count == 1)
        #expect(capture.warnings.first?.contains("samples and 0 other records were dropped") == true)
        let stall = try #require(capture.stalls.first)
        #expect(UInt64(stall.samples.count) + capture.droppedSamples == 1_000)
        #expect(stall.samples.count > 10)
        #expect(capture.drops.count == 1)
        #expect(capture.drops.first.map { $0.firstNs <= $0.lastNs && $0.otherCount == 0 } == true)
        #expect(stall.isFinished)
        #expect(capture.closedCleanly)
    }
}
