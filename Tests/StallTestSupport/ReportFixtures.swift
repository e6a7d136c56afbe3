import Foundation
import StallAnalysis
import StallFormat

// Functions of this test binary with plain C names, so synthetic captures resolve to known names through the
// real symbolizer. Distinct bodies keep them distinct functions.
@_cdecl("stallprof_fixture_layout_pass") public func fixtureLayoutPass() -> Int { 101 }
@_cdecl("stallprof_fixture_markdown_height") public func fixtureMarkdownHeight() -> Int { 102 }
@_cdecl("stallprof_fixture_recur_a") public func fixtureRecurA() -> Int { 103 }
@_cdecl("stallprof_fixture_recur_b") public func fixtureRecurB() -> Int { 104 }
@_cdecl("stallprof_fixture_render") public func fixtureRender() -> Int { 105 }
@_cdecl("stallprof_fixture_owner_work") public func fixtureOwnerWork() -> Int { 106 }

/// Synthetic captures for the report's tests: written with ``CaptureWriter`` and read back like real files.
public enum ReportFixtures {
    /// Addresses inside the fixture functions (two bytes in, so they resolve as leaves and as return addresses).
    public static func address(_ function: @convention(c) () -> Int) -> UInt64 {
        UInt64(UInt(bitPattern: unsafeBitCast(function, to: Int.self))) + 2
    }

    public static var pass: UInt64 { address(fixtureLayoutPass) }
    public static var height: UInt64 { address(fixtureMarkdownHeight) }
    public static var recurA: UInt64 { address(fixtureRecurA) }
    public static var recurB: UInt64 { address(fixtureRecurB) }
    public static var render: UInt64 { address(fixtureRender) }
    public static var ownerWork: UInt64 { address(fixtureOwnerWork) }
    /// Frames in a system library that does not exist: they read `[libsystemfake.so.1]`.
    public static let system: UInt64 = 0x2000, systemLeaf: UInt64 = 0x3000
    public static let systemLibrary = ImageRecord(
        path: "/usr/lib/x86_64-linux-gnu/libsystemfake.so.1", loadBias: 0x1000, start: 0x1000, end: 0x9000, buildID: [])

    /// This test binary as an image at its real load address. /proc/self/maps is read to its end with
    /// `FileReader`: Foundation's `String(contentsOfFile:)` stops after the first read, one page of a /proc file,
    /// and under TSan that page holds only the runtime's shadow mappings, not this binary.
    public static let ownImage: ImageRecord = {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        let maps = FileReader.text(of: "/proc/self/maps") ?? ""
        var start: UInt64 = .max, end: UInt64 = 0
        for line in maps.split(separator: "\n") where line.hasSuffix(exe) {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            let bounds = fields[0].split(separator: "-")
            let low = UInt64(bounds[0], radix: 16) ?? 0, high = UInt64(bounds[1], radix: 16) ?? 0
            if fields[2] == "00000000" { start = min(start, low) }
            end = max(end, high)
        }
        return ImageRecord(path: exe, loadBias: start, start: start, end: end, buildID: [])
    }()

    public static let startNs: UInt64 = 1_000_000_000
    /// 2026-11-30T21:00:00.123Z.
    public static let startWallNs: UInt64 = 1_796_072_400_123_000_000

    /// The records of an episode of `target` sampled on thread `tid` (watched with `thresholdNs`, nil: not said):
    /// begin, `samples` (leaf-first stacks, 10 ms apart from detection; `turns[i]` the i-th sample's turn, 0 when
    /// none), end.
    public static func episode(
        _ id: UInt32, kind: EpisodeKind = .stall, at startMs: UInt64, durationMs: UInt64, state: StallState,
        cpuPerMille: UInt64 = 1000, samples: [[UInt64]], missed: UInt32 = 0, finished: Bool = true,
        turns: [UInt64] = [], target: String = StallBeginRecord.mainTarget, tid: Int32 = 4242,
        thresholdNs: UInt64? = nil
    ) -> [CaptureRecord] {
        let start = startNs + startMs * 1_000_000
        var records: [CaptureRecord] = [.stallBegin(StallBeginRecord(
            stallID: id, startNs: start, detectedNs: start + 250_000_000, threadID: tid, kind: kind, target: target,
            thresholdNs: thresholdNs))]
        for (index, frames) in samples.enumerated() {
            let at = start + 250_000_000 + UInt64(index) * 10_000_000
            records.append(.sample(SampleRecord(
                stallID: id, timestampNs: at, threadCPUNs: UInt64(index) * 10_000_000 * cpuPerMille / 1000,
                flags: [], frames: frames, turn: index < turns.count ? turns[index] : 0)))
        }
        if finished {
            let measured = durationMs * 1_000_000
            records.append(.stallEnd(StallEndRecord(
                stallID: id, endNs: start + measured, cpuNs: measured * cpuPerMille / 1000, measuredNs: measured,
                state: state, sampleCount: UInt32(samples.count), missedCount: missed)))
        }
        return records
    }

    /// A capture: the process record (this binary), both images, `body`, and a close record `recordedMs`
    /// after the start (none when nil).
    public static func records(_ body: [CaptureRecord], recordedMs: UInt64? = 60_000) -> [CaptureRecord] {
        [
            .process(ProcessRecord(pid: 4242, startMonotonicNs: startNs, startWallNs: startWallNs,
                                   thresholdNs: 250_000_000, sampleIntervalNs: 10_000_000, executable: ownImage.path)),
            .image(ownImage), .image(systemLibrary),
        ] + body + (recordedMs.map { [.close(timestampNs: startNs + $0 * 1_000_000)] } ?? [])
    }

    /// Writes `records` with ``CaptureWriter`` to a new temporary file (tests run in parallel) and returns its path.
    public static func write(_ records: [CaptureRecord], name: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("report-\(getpid())-\(name)-\(UUID().uuidString).stalls").path
        let writer = try CaptureWriter(path: path)
        records.forEach(writer.append)
        try writer.close()
        return path
    }

    /// Writes and reads back through the importer, as `stallprof report` does.
    public static func capture(_ records: [CaptureRecord], name: String) throws -> Capture {
        let path = try write(records, name: name)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try StallCaptureImporter.read(InputSource(path: path).open())
    }

    /// The capture most tests use: six episodes of both kinds and states.
    public static func mixedRecords() -> [CaptureRecord] {
        let driverAndLeaf = [height, pass, system], driverOnly = [systemLeaf, pass, system]
        let cycle = [systemLeaf, recurB, recurA, recurB, recurA, system]
        return records(
            episode(1, at: 2_000, durationMs: 1_000, state: .busy, cpuPerMille: 1_300,
                    samples: Array(repeating: driverAndLeaf, count: 8) + Array(repeating: driverOnly, count: 2), missed: 1)
            + episode(2, kind: .saturated, at: 5_000, durationMs: 2_000, state: .busy,
                      samples: (0..<10).map { $0 % 2 == 0 ? [systemLeaf, render, system] : [height, render, system] })
            + episode(3, at: 9_000, durationMs: 500, state: .busy,
                      samples: Array(repeating: cycle, count: 6) + Array(repeating: [systemLeaf, system], count: 2))
            + episode(4, at: 12_000, durationMs: 800, state: .blocked, cpuPerMille: 0,
                      samples: Array(repeating: [systemLeaf, pass, system], count: 5))
            + [.blockedOn(BlockedOnRecord(
                stallID: 4, timestampNs: startNs + 12_300_000_000, waitKind: .mutex, syscall: futexNumber,
                argument: 0x7f00_1000, ownerTID: 4321, ownerName: "lock-holder", ownerState: UInt8(ascii: "S"),
                ownerSyscall: nanosleepNumber, ownerFlags: .fromStackMemory, ownerFrames: [systemLeaf, ownerWork, system]))]
            + episode(5, at: 15_000, durationMs: 300, state: .blocked, cpuPerMille: 0,
                      samples: Array(repeating: [systemLeaf, pass, system], count: 3))
            + [.blockedOn(BlockedOnRecord(
                stallID: 5, timestampNs: startNs + 15_300_000_000, waitKind: .syscall, syscall: readNumber, argument: 5,
                detail: "read fd 5 (pipe:[1234])"))]
            + episode(6, at: 20_000, durationMs: 700, state: .busy,
                      samples: Array(repeating: [systemLeaf, system], count: 10))
            // A busy thread caught in a futex in passing: not what froze it, so the report leaves it out.
            + [.blockedOn(BlockedOnRecord(
                stallID: 6, timestampNs: startNs + 20_300_000_000, waitKind: .futex, syscall: futexNumber))]
            + markerRecords())
    }

    /// A capture of three watched targets sharing one episode numbering: `main` (stalls 1, busy, and 4, blocked),
    /// `loop-1` on thread 4300 (stall 2, busy in `render`, and saturated 5) and `db-queue` on thread 4400 (stall 3,
    /// blocked in `layout_pass`). Frames: `main`'s leaves are `markdown_height` or the system library, `loop-1`'s
    /// `render` is on every stack, `db-queue`'s `owner_work`.
    public static func targetRecords() -> [CaptureRecord] {
        records(
            episode(1, at: 2_000, durationMs: 1_000, state: .busy, samples: Array(repeating: [height, pass, system], count: 10))
            + episode(2, at: 2_500, durationMs: 600, state: .busy,
                      samples: Array(repeating: [systemLeaf, render, system], count: 6), target: "loop-1", tid: 4300)
            + episode(3, at: 4_000, durationMs: 400, state: .blocked, cpuPerMille: 0,
                      samples: Array(repeating: [systemLeaf, ownerWork, system], count: 4), target: "db-queue", tid: 4400)
            + episode(4, at: 9_000, durationMs: 500, state: .blocked, cpuPerMille: 0,
                      samples: Array(repeating: [systemLeaf, pass, system], count: 5))
            + episode(5, kind: .saturated, at: 12_000, durationMs: 2_000, state: .busy,
                      samples: Array(repeating: [height, render, system], count: 8), target: "loop-1", tid: 4300))
    }

    /// App markers: around stall 1 (an instant before it, an interval over it, an instant on another thread in
    /// it), an interval that never ends before stall 6, and one far from every episode.
    public static func markerRecords() -> [CaptureRecord] {
        func marker(_ kind: MarkerRecord.Kind, _ span: UInt64, _ ms: UInt64, _ name: String, tid: Int32 = 4242)
            -> CaptureRecord
        {
            .marker(MarkerRecord(kind: kind, spanID: span, threadID: tid, timestampNs: startNs + ms * 1_000_000, name: name))
        }
        return [
            marker(.instant, 0, 1_600, "touchDown"), marker(.begin, 1, 1_950, "perform"),
            marker(.instant, 0, 2_500, "prefetch", tid: 4300), marker(.end, 1, 2_950, ""),
            marker(.begin, 2, 19_500, "sync"), marker(.instant, 0, 40_000, "idle"),
        ]
    }

    public static var architecture: SyscallNames.Architecture { SyscallNames.architecture(ofExecutable: ownImage.path) }
    public static var futexNumber: Int32 { architecture == .x86_64 ? 202 : 98 }
    public static var nanosleepNumber: Int32 { architecture == .x86_64 ? 35 : 101 }
    public static var readNumber: Int32 { architecture == .x86_64 ? 0 : 63 }

    /// `bytes` of a version 3 capture rewritten as version 1: no kind byte nor target in stallBegin, CRCs
    /// recomputed.
    public static func versionOne(_ bytes: [UInt8]) -> [UInt8] {
        var out = Array(bytes[..<16])
        out[8] = 1
        var offset = 16
        while offset + 5 <= bytes.count {
            let type = bytes[offset]
            let length = Int(bytes[offset + 1]) | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3]) << 16
                | Int(bytes[offset + 4]) << 24
            var payload = Array(bytes[(offset + 5)..<(offset + 5 + length)])
            if type == 3 { payload = Array(payload.prefix(24)) }  // id, start, detected, thread
            var record = [type] + withUnsafeBytes(of: UInt32(payload.count).littleEndian, Array.init) + payload
            record += withUnsafeBytes(of: crc32(record).littleEndian, Array.init)
            out += record
            offset += 5 + length + 4
        }
        return out
    }

    /// CRC-32 (IEEE, as zlib).
    public static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
