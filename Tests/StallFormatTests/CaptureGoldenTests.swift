import Foundation
import Testing

@testable import StallFormat

/// The golden capture: `Fixtures/every-record.stalls`, a capture holding every record kind, written by
/// ``CaptureWriter`` from fixed values (no time, pid or path of the machine running the tests). The writer must
/// produce exactly its bytes and the reader must read them back into the same values, so a change of any field's
/// width, order or encoding fails here even when the writer and the reader change together.
/// `STALLPROF_BLESS=1 swift test` rewrites the file (a deliberate format change: say so in docs/FORMAT.md).
@Suite struct CaptureGoldenTests {
    /// `Tests/StallFormatTests/Fixtures/every-record.stalls` in the source tree.
    static let goldenURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/every-record.stalls")

    static let thread = ThreadState(
        tid: 1002, name: "worker", state: UInt8(ascii: "S"), syscall: 202, waitKind: .mutex, object: 0x7f00_0000_1000,
        ownerTID: 1001, cpuNs: 3_500_000, flags: [.fromStackMemory, .truncated], detail: "futex wait",
        queueLabel: "", frames: [0x5555_0000_1100, 0x5555_0000_1200])

    /// One of each record kind, with every field set to a value of its own (so that two swapped fields show).
    static let records: [CaptureRecord] = [
        .process(ProcessRecord(pid: 1001, startMonotonicNs: 5_000_000_000, startWallNs: 1_700_000_000_123_456_789,
                               thresholdNs: 250_000_000, sampleIntervalNs: 10_000_000, executable: "/opt/app/bin/app")),
        .image(ImageRecord(path: "/opt/app/bin/app", loadBias: 0x5555_0000_0000, start: 0x5555_0000_1000,
                           end: 0x5555_0010_0000, buildID: [0xde, 0xad, 0xbe, 0xef, 0x01])),
        .image(ImageRecord(path: "linux-vdso.so.1", loadBias: 0x7fff_f7fc_0000, start: 0x7fff_f7fc_1000,
                           end: 0x7fff_f7fc_3000, buildID: [])),
        .imageContents(ImageContentsRecord(address: 0x7fff_f7fc_1000, path: "linux-vdso.so.1",
                                           bytes: [0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0])),
        .stallBegin(StallBeginRecord(stallID: 1, startNs: 6_000_000_000, detectedNs: 6_250_000_000, threadID: 1001,
                                     kind: .stall)),
        .sample(SampleRecord(stallID: 1, timestampNs: 6_125_000_000, threadCPUNs: 120_000_000, runQueueNs: 4_000,
                             flags: [.framePointers, .queueCodeKnown], frames: [0x5555_0000_2000, 0x5555_0000_3000],
                             turn: 77)),
        .sample(SampleRecord(stallID: 1, timestampNs: 6_135_000_000, threadCPUNs: 120_000_001, runQueueNs: 5_000,
                             flags: [.repeated, .waitingForCPU], frames: [], turn: 78)),
        .signalMask(SignalMaskRecord(stallID: 1, timestampNs: 6_260_000_000, threadID: 1001, signal: 27,
                                     blockedMask: 1 << 26 | 1 << 1)),
        .blockedOn(BlockedOnRecord(
            stallID: 1, timestampNs: 6_270_000_000, waitKind: .dispatchSync, syscall: 202, argument: 0x7f00_0000_2000,
            ownerTID: 1002, ownerName: "worker", ownerState: UInt8(ascii: "R"), ownerSyscall: -1,
            ownerFlags: .signalled, detail: "dispatch_sync", ownerFrames: [0x5555_0000_4000], queueLabel: "com.app.db")),
        .threads(ThreadsRecord(stallID: 1, timestampNs: 6_280_000_000, phase: .snapshot, totalThreads: 3,
                               threads: [thread])),
        .threads(ThreadsRecord(stallID: 1, timestampNs: 6_900_000_000, phase: .cpu, totalThreads: 3,
                               threads: [ThreadState(tid: 1002, cpuNs: 9_000_000)])),
        .stallEnd(StallEndRecord(stallID: 1, endNs: 7_000_000_000, cpuNs: 600_000_000, runQueueNs: 30_000_000,
                                 measuredNs: 900_000_000, state: .blocked, sampleCount: 2, missedCount: 1,
                                 pausedNs: 50_000_000, missedRunQueueNs: 20_000_000,
                                 sampleRate: EpisodeSampleRate(samplesPerKilosecond: 2_222, tickNs: 4_000_000,
                                                               limit: .tick))),
        .stallBegin(StallBeginRecord(stallID: 2, startNs: 8_000_000_000, detectedNs: 8_500_000_000, threadID: 1001,
                                     kind: .saturated, target: "event-loop-2")),
        .stallEnd(StallEndRecord(stallID: 2, endNs: 9_000_000_000, cpuNs: 990_000_000, measuredNs: 1_000_000_000,
                                 state: .busy, sampleCount: 0, missedCount: 0)),
        .marker(MarkerRecord(kind: .instant, threadID: 1001, timestampNs: 5_500_000_000, name: "launch")),
        .marker(MarkerRecord(kind: .begin, spanID: 9, threadID: 1002, timestampNs: 5_600_000_000, name: "load")),
        .marker(MarkerRecord(kind: .end, spanID: 9, threadID: 1002, timestampNs: 5_700_000_000, name: "")),
        .marker(MarkerRecord(kind: .dropped, spanID: 4, threadID: 1003, timestampNs: 5_800_000_000, name: "")),
        .dropped(DroppedRecord(sampleCount: 12, otherCount: 3, firstNs: 9_100_000_000, lastNs: 9_200_000_000)),
        .symbolication(SymbolicationRecord(
            wallNs: 1_700_000_100_000_000_000, machine: 62, appModules: ["App", "AppCore"],
            sources: [.init(image: "/opt/app/bin/app", symbols: "/opt/app/bin/app", lines: "/debug/app.debug"),
                      .init(image: "linux-vdso.so.1", symbols: "(copied from memory)", lines: "")])),
        .symbols(SymbolsRecord(entries: [
            0x5555_0000_1fff: EmbeddedSymbol(symbol: "$s3App4mainyyF", offset: 0x1f, frames: [
                EmbeddedSourceFrame(function: "inlined", file: "/src/App.swift", line: 12),
                EmbeddedSourceFrame(function: "$s3App4mainyyF", file: "/src/App.swift", line: 40),
            ]),
            0x5555_0000_2fff: EmbeddedSymbol(symbol: "malloc", offset: 0, isPLT: true),
            0x5555_0000_3fff: EmbeddedSymbol(symbol: nil),
        ])),
        .close(timestampNs: 9_999_000_000),
    ]

    @Test func theWriterWritesTheGoldenBytes() throws {
        let path = NSTemporaryDirectory() + "golden-\(UUID().uuidString).stalls"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try CaptureWriter(path: path)
        for record in Self.records { writer.append(record) }
        try writer.close()
        let written = try CaptureReader.readWholeFile(path)
        if ProcessInfo.processInfo.environment[EnvironmentName.bless] == "1" {
            try Data(written).write(to: Self.goldenURL)
        }
        let golden = try CaptureReader.readWholeFile(Self.goldenURL.path)
        if written != golden {
            let actualURL = Self.goldenURL.deletingPathExtension().appendingPathExtension("actual")
            try Data(written).write(to: actualURL)
            Issue.record(Comment(rawValue: Self.difference(expected: golden, actual: written)
                + "\nthe writer's bytes are in \(actualURL.path); \(EnvironmentName.bless)=1 swift test accepts them"))
        }
    }

    @Test func theReaderReadsTheGoldenBytesBack() throws {
        let golden = try CaptureReader.readWholeFile(Self.goldenURL.path)
        let (records, warning) = try CaptureReader.records(golden, source: "every-record.stalls")
        #expect(warning == nil)
        #expect(records.count == Self.records.count)
        for (index, (read, expected)) in zip(records, Self.records).enumerated() {
            #expect(read == expected, "record \(index)")
        }
        let capture = try CaptureReader.parse(golden, source: "every-record.stalls")
        #expect(capture.closedCleanly && capture.closedAtNs == 9_999_000_000)
        #expect(capture.stalls.map(\.kind) == [.stall, .saturated])
        #expect(capture.stalls[0].samples[1].frames == [0x5555_0000_2000, 0x5555_0000_3000])
        #expect(capture.stalls[0].threads.count == 2 && capture.stalls[0].blockedOn?.queueLabel == "com.app.db")
        #expect(capture.markers.map(\.name) == ["launch", "load"] && capture.droppedMarkers == 4)
        #expect(capture.droppedSamples == 12 && capture.symbols.count == 3 && capture.imageContents.count == 1)
        #expect(capture.stalls[0].samplesPerSecond == 2.222 && capture.stalls[1].end?.sampleRate == nil)
    }

    /// Where two captures first differ: the byte, the record it is in (by the expected file's framing) and the
    /// bytes around it in hex.
    static func difference(expected: [UInt8], actual: [UInt8]) -> String {
        let first = (0..<min(expected.count, actual.count)).first { expected[$0] != actual[$0] } ?? min(expected.count, actual.count)
        var offset = CaptureFormat.headerSize, index = 0, place = "the header"
        while offset + CaptureFormat.recordPrefixSize <= expected.count {
            let length = expected[(offset + 1)..<(offset + 5)].reversed().reduce(0) { $0 << 8 | Int($1) }
            let end = offset + CaptureFormat.recordPrefixSize + length + CaptureFormat.recordSuffixSize
            if first >= offset && first < end {
                place = "record \(index) (type \(expected[offset])) at byte \(offset), its byte \(first - offset)"
                break
            }
            (offset, index) = (end, index + 1)
        }
        func hex(_ bytes: [UInt8]) -> String {
            let window = bytes[min(bytes.count, max(0, first - 8))..<min(bytes.count, first + 24)]
            return window.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }
                .joined(separator: " ")
        }
        return "the writer's bytes differ from every-record.stalls (\(expected.count) bytes; the writer wrote "
            + "\(actual.count)) first at byte \(first), in \(place):\n  expected \(hex(expected))\n  actual   "
            + hex(actual)
    }
}
