import Testing

@testable import StallFormat

/// Version 2 adds episode kinds and blocked-on records, version 3 the watched target; older files still read.
@Suite struct FormatVersionTests {
    static let blocked = BlockedOnRecord(
        stallID: 2, timestampNs: 900, waitKind: .mutex, syscall: 202, argument: 0x7fff_0000_1000, ownerTID: 4321,
        ownerName: "lock-holder", ownerState: UInt8(ascii: "S"), ownerSyscall: 230, ownerFlags: .fromStackMemory,
        detail: "", ownerFrames: [0x1000, 0x2000, 0x3000])

    static func records() -> [CaptureRecord] {
        [
            .process(ProcessRecord(pid: 7, startMonotonicNs: 100, startWallNs: 5, thresholdNs: 250, sampleIntervalNs: 10,
                                   executable: "/app")),
            .stallBegin(StallBeginRecord(stallID: 1, startNs: 200, detectedNs: 1_200, threadID: 7, kind: .saturated)),
            .stallEnd(StallEndRecord(stallID: 1, endNs: 2_000, cpuNs: 1_700, measuredNs: 1_800, state: .busy,
                                     sampleCount: 0, missedCount: 0)),
            .stallBegin(StallBeginRecord(stallID: 2, startNs: 2_500, detectedNs: 2_750, threadID: 7)),
            .blockedOn(blocked),
        ]
    }

    @Test func kindsAndBlockedOnRoundTrip() throws {
        var bytes = CaptureFormat.header
        for record in Self.records() { record.encode(into: &bytes) }
        #expect(bytes[8] == CaptureFormat.version && bytes[9] == 0)
        let (records, warning) = try CaptureReader.records(bytes, source: "v2")
        #expect(warning == nil)
        #expect(records == Self.records())
        let capture = try CaptureReader.parse(bytes, source: "v2")
        #expect(capture.stalls.map(\.kind) == [.saturated, .stall])
        #expect(capture.stalls[1].blockedOn == Self.blocked)
        #expect(capture.stalls[0].blockedOn == nil)
    }

    /// A version 1 file (as the first release wrote it: no kind byte in stallBegin) reads as stalls.
    @Test func aHeaderCutShortSaysSo() {
        for length in [8, 10, 15] {
            let bytes = Array(CaptureFormat.header.prefix(length))
            do {
                _ = try CaptureReader.records(bytes, source: "cut.stalls")
                Issue.record("a \(length)-byte header was accepted")
            } catch {
                #expect("\(error)".contains("cut.stalls: byte \(length): the capture's 16-byte header is cut short"), "\(error)")
            }
        }
    }

    @Test func versionOneFilesStillRead() throws {
        var bytes = CaptureFormat.header
        bytes[8] = 1
        var begin: [UInt8] = []
        begin.appendLE(UInt32(1))
        begin.appendLE(UInt64(200))
        begin.appendLE(UInt64(450))
        begin.appendLE(Int32(7))
        bytes.append(3)
        bytes.appendLE(UInt32(begin.count))
        bytes.append(contentsOf: begin)
        let crc = bytes.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[16...])) }
        bytes.appendLE(crc)
        let capture = try CaptureReader.parse(bytes, source: "v1")
        #expect(capture.stalls.count == 1)
        #expect(capture.stalls[0].kind == .stall)
        #expect(capture.stalls[0].begin.detectedNs == 450)
        #expect(capture.stalls[0].target == "main")
    }

    /// Version 3 names each episode's watched target; a version 2 begin record (no target) reads as `main`.
    @Test func theTargetRoundTripsAndVersionTwoReadsAsMain() throws {
        let records: [CaptureRecord] = [
            .stallBegin(StallBeginRecord(stallID: 1, startNs: 10, detectedNs: 20, threadID: 7, target: "loop-1")),
            .stallBegin(StallBeginRecord(stallID: 2, startNs: 30, detectedNs: 40, threadID: 8, kind: .saturated)),
        ]
        let bytes = CaptureRoundTripTests.encoded(records)
        #expect(bytes[8] == 3 && bytes[9] == 0)
        let capture = try CaptureReader.parse(bytes, source: "v3")
        #expect(capture.stalls.map(\.target) == ["loop-1", "main"])
        var older = CaptureFormat.header
        older[8] = 2
        for case .stallBegin(let begin) in records {
            var payload: [UInt8] = []
            begin.encode(into: &payload)
            older += Self.record(type: 3, payload: Array(payload.prefix(25)))  // no target
        }
        let v2 = try CaptureReader.parse(older, source: "v2")
        #expect(v2.stalls.map(\.target) == ["main", "main"])
        #expect(v2.stalls.map(\.kind) == [.stall, .saturated])
    }

    /// A target's own threshold trails the begin record (no new version): it round-trips, a record without it
    /// reads nil, and the bytes before it are the older record's.
    @Test func theThresholdTrailsTheBeginRecord() throws {
        let with = StallBeginRecord(
            stallID: 1, startNs: 10, detectedNs: 20, threadID: 7, target: "loop-1", thresholdNs: 50_000_000)
        var without = with
        without.thresholdNs = nil
        let bytes = CaptureRoundTripTests.encoded([.stallBegin(with), .stallBegin(without)])
        #expect(CaptureFormat.version == 3, "a trailing field keeps the version")
        let capture = try CaptureReader.parse(bytes, source: "threshold")
        #expect(capture.stalls.map(\.thresholdNs) == [50_000_000, nil])
        var a: [UInt8] = [], b: [UInt8] = []
        with.encode(into: &a)
        without.encode(into: &b)
        #expect(a.count == b.count + 8 && Array(a.prefix(b.count)) == b)
    }

    /// A record of `type` around `payload`: type, length, payload and CRC.
    static func record(type: UInt8, payload: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = [type]
        bytes.appendLE(UInt32(payload.count))
        bytes += payload
        bytes.appendLE(bytes.withUnsafeBytes { CRC32.checksum($0) })
        return bytes
    }

    /// A target name is never empty: an empty one is bad data, with the file and byte named.
    @Test func anEmptyTargetNameIsBadData() throws {
        var payload: [UInt8] = []
        StallBeginRecord(stallID: 1, startNs: 10, detectedNs: 20, threadID: 7, target: "x").encode(into: &payload)
        payload.removeLast(5)
        payload.appendLE(UInt32(0))
        let bytes = CaptureFormat.header + Self.record(type: 3, payload: payload)
        #expect(throws: CaptureFormatError.self) { try CaptureReader.records(bytes, source: "empty.stalls") }
        do { _ = try CaptureReader.records(bytes, source: "empty.stalls") } catch {
            #expect("\(error)".contains("empty.stalls") && "\(error)".contains("empty target name"), "\(error)")
        }
    }

    /// The signal-mask record (type 10) is a new record type: the version stays, and a reader that predates it reads
    /// everything else (its rule: an unknown type is skipped, CRC checked).
    @Test func signalMaskRecordsNeedNoNewVersion() throws {
        let mask = SignalMaskRecord(stallID: 2, timestampNs: 2_800, threadID: 7, signal: 27, blockedMask: 1 << 26)
        var bytes = CaptureFormat.header
        for record in Self.records() + [.signalMask(mask)] { record.encode(into: &bytes) }
        #expect(bytes[8] == CaptureFormat.version && bytes[9] == 0)
        #expect(try CaptureReader.records(bytes, source: "v2").records.last == .signalMask(mask))
        let capture = try CaptureReader.parse(bytes, source: "v2")
        #expect(capture.stalls[1].signalMask == mask && capture.stalls[0].signalMask == nil)
        // As an older reader sees it: type 10 unknown (here: renumbered to a type this reader does not know).
        let start = bytes.count - (CaptureFormat.recordPrefixSize + 28 + CaptureFormat.recordSuffixSize)
        #expect(bytes[start] == 10)
        bytes[start] = 200
        let crc = bytes.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[start..<(bytes.count - 4)])) }
        withUnsafeBytes(of: crc.littleEndian) { for k in 0..<4 { bytes[bytes.count - 4 + k] = $0[k] } }
        let older = try CaptureReader.parse(bytes, source: "older")
        #expect(older.stalls.count == 2 && older.stalls.allSatisfy { $0.signalMask == nil })
        // A mask record that is too short is corruption, with its offset.
        var short = CaptureFormat.header
        CaptureRecord.signalMask(mask).encode(into: &short)
        short[17] = 20  // the payload length: 20 of its 28 bytes
        let cut = Array(short[0..<(16 + 5 + 20)])
        var framed = cut
        let shortCRC = framed.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[16...])) }
        framed.appendLE(shortCRC)
        let error = try #require(throws: CaptureFormatError.self) { try CaptureReader.parse(framed, source: "short") }
        #expect(error.reason.contains("record too short"))
    }

    @Test func unknownVersionsAndKindsAreErrors() throws {
        var bytes = CaptureFormat.header
        bytes[8] = 4
        #expect(throws: CaptureFormatError.self) { try CaptureReader.parse(bytes, source: "v4") }
        var bad = CaptureFormat.header
        StallBeginRecord(stallID: 1, startNs: 1, detectedNs: 2, threadID: 3, kind: .saturated)
            .asRecord.encode(into: &bad)
        // Patch the kind byte (before the target "main": length and 4 bytes) to an unknown value and fix the CRC.
        let kindIndex = bad.count - 4 - 8 - 1
        bad[kindIndex] = 9
        let crc = bad.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[16..<(bad.count - 4)])) }
        withUnsafeBytes(of: crc.littleEndian) { for k in 0..<4 { bad[bad.count - 4 + k] = $0[k] } }
        let error = try #require(throws: CaptureFormatError.self) { try CaptureReader.parse(bad, source: "kind") }
        #expect(error.reason.contains("episode kind 9"))
    }
}

extension StallBeginRecord {
    var asRecord: CaptureRecord { .stallBegin(self) }
}
