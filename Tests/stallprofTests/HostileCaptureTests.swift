import Foundation
import StallFormat
import StallTestSupport
import Testing

/// Captures whose checksums are valid but whose numbers are out of range, and images that are not ELF files or
/// are corrupt ones: every command ends with 0 (a warning) or 65, within seconds, never by a signal.
@Suite struct HostileCaptureTests {
    static let max = UInt64.max

    /// Episodes with extreme numbers: cpu + wait overflowing, end before start, durations of 2^64-1 ns, huge
    /// thresholds and intervals, samples far in the future or the past.
    static func extremeRecords(image: ImageRecord) -> [CaptureRecord] {
        var records: [CaptureRecord] = [
            .process(ProcessRecord(pid: .max, startMonotonicNs: max, startWallNs: max, thresholdNs: max,
                                   sampleIntervalNs: 0, executable: image.path)),
            .image(image),
            .image(ImageRecord(path: "/", loadBias: max, start: max, end: 0, buildID: [])),
        ]
        let stack: [UInt64] = [image.start &+ 0x40, image.start &+ 0x80, max, 0]
        for (id, (start, end, cpu, wait, measured)) in [
            (max, max, max, max, max), (max, 0, max, 1, max), (0, max, max / 2 + 1, max / 2 + 1, 0),
            (5, 1, 0, max, 1), (0, 0, 0, 0, 0),
        ].enumerated() {
            let stallID = UInt32(id + 1)
            records.append(.stallBegin(StallBeginRecord(stallID: stallID, startNs: start, detectedNs: max,
                                                        threadID: .min, kind: id % 2 == 0 ? .stall : .saturated)))
            for (index, at) in [0, max, start, max / 2].enumerated() {
                records.append(.sample(SampleRecord(stallID: stallID, timestampNs: at, threadCPUNs: index % 2 == 0 ? max : 0,
                                                    runQueueNs: max, flags: index == 3 ? [.repeated] : [.truncated],
                                                    frames: index == 3 ? [] : stack)))
            }
            records.append(.blockedOn(BlockedOnRecord(
                stallID: stallID, timestampNs: max, waitKind: .mutex, syscall: .min, argument: max, ownerTID: .min,
                ownerSyscall: .max, ownerFlags: .truncated, ownerFrames: stack)))
            records.append(.stallEnd(StallEndRecord(stallID: stallID, endNs: end, cpuNs: cpu, runQueueNs: wait,
                                                    measuredNs: measured, state: id % 2 == 0 ? .busy : .blocked,
                                                    sampleCount: .max, missedCount: .max, pausedNs: id % 2 == 1 ? max : 0)))
        }
        // Markers at the ends of the clock, an interval ending before it began: drawn on the flame chart and the
        // trace beside the episodes above (an episode whose pause overflowed its end once trapped the chart).
        for (kind, span, at) in [(MarkerRecord.Kind.instant, UInt64(0), max), (.begin, 7, max), (.end, 7, 0),
                                 (.begin, 8, 0), (.end, 8, max), (.instant, 0, 0)] {
            records.append(.marker(MarkerRecord(kind: kind, spanID: span, threadID: .min, timestampNs: at, name: "m")))
        }
        records.append(.close(timestampNs: 0))
        return records
    }

    /// Runs every reading command on `capture`; each must exit 0, or 65 with a message naming the file and the byte
    /// where the bad data is, within 20 s (a debug build on a loaded machine; seconds otherwise), never by a signal.
    static func expectNoTrap(_ capture: String) throws {
        for arguments in [["fold"], ["fold", "--simplify-names"], ["report"], ["report", "--json"],
                          ["flamegraph", "--flamechart"], ["flamegraph"], ["diff", capture],
                          ["export", "--format", "chrome-trace"], ["export", "--format", "speedscope"],
                          ["export", "--format", "pprof", "-o", "/dev/null"]] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CLI.path)
            process.arguments = arguments + [capture]
            process.standardOutput = FileHandle.nullDevice
            let errors = Pipe()
            process.standardError = errors
            try process.run()
            let killer = DispatchWorkItem { if process.isRunning { process.terminate() } }
            DispatchQueue.global().asyncAfter(deadline: .now() + 20, execute: killer)
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            killer.cancel()
            #expect(process.terminationReason == .exit, "\(arguments): signal \(process.terminationStatus); \(message)")
            #expect([0, 65].contains(process.terminationStatus), "\(arguments): \(message)")
            if process.terminationStatus == 65 {
                #expect(message.contains(capture) && message.contains("byte"), "\(arguments): \(message)")
            }
        }
    }

    @Test func outOfRangeNumbersNeverTrap() throws {
        let path = try ReportFixtures.write(Self.extremeRecords(image: ReportFixtures.ownImage), name: "extreme")
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Self.expectNoTrap(path)
    }

    /// ELF files with a section table past the end, sizes near 2^64, names past the end of their table.
    static func corruptELFs() -> [[UInt8]] {
        func header(sectionTable: UInt64, entrySize: UInt16 = 64, count: UInt16, names: UInt16) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: 64)
            bytes[0...5] = [0x7f, 0x45, 0x4c, 0x46, 2, 1]
            withUnsafeBytes(of: sectionTable.littleEndian) { bytes[0x28..<0x30] = ArraySlice($0) }
            withUnsafeBytes(of: entrySize.littleEndian) { bytes[0x3A..<0x3C] = ArraySlice($0) }
            withUnsafeBytes(of: count.littleEndian) { bytes[0x3C..<0x3E] = ArraySlice($0) }
            withUnsafeBytes(of: names.littleEndian) { bytes[0x3E..<0x40] = ArraySlice($0) }
            return bytes
        }
        func section(name: UInt32, type: UInt32, address: UInt64, offset: UInt64, size: UInt64, link: UInt32,
                     entrySize: UInt64) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: 64)
            func put<T: FixedWidthInteger>(_ value: T, _ at: Int) {
                withUnsafeBytes(of: value.littleEndian) { bytes[at..<(at + MemoryLayout<T>.size)] = ArraySlice($0) }
            }
            put(name, 0); put(type, 4); put(address, 16); put(offset, 24); put(size, 32); put(link, 40)
            put(UInt64.max, 48); put(entrySize, 56)
            return bytes
        }
        let huge = UInt64.max
        let sections = [
            section(name: 0, type: 3, address: 0, offset: 64, size: huge, link: 0, entrySize: 0),
            section(name: 1, type: 2, address: huge, offset: huge - 10, size: huge, link: 0, entrySize: huge),
            section(name: 2, type: 11, address: huge, offset: 64, size: 64 * 4, link: 3, entrySize: huge),
            section(name: 0xffff_fff0, type: 7, address: huge, offset: 1 << 63, size: 1 << 63, link: 9, entrySize: 24),
            section(name: 3, type: 4, address: huge, offset: 64, size: 24 * 4, link: 2, entrySize: 24),
        ].flatMap { $0 }
        return [
            header(sectionTable: 1 << 40, count: 4, names: 0),  // section table past the end
            header(sectionTable: huge, count: 65535, names: 0),  // offset + size overflows
            header(sectionTable: 64, count: 5, names: 0) + sections,  // sections with absurd offsets and sizes
            header(sectionTable: 64, count: 5, names: 4) + sections + [UInt8](repeating: 0xff, count: 512),
        ]
    }

    @Test func directoriesFIFOsAndCorruptELFImagesNeverTrap() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-\(getpid())").path
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(mkfifo(dir + "/fifo", 0o600) == 0)
        var images = [dir, dir + "/fifo", "/dev/zero"]
        for (index, bytes) in Self.corruptELFs().enumerated() {
            let path = dir + "/corrupt\(index).so"
            #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
            images.append(path)
        }
        for path in images {
            let image = ImageRecord(path: path, loadBias: 0x10_0000, start: 0x10_0000, end: 0x20_0000, buildID: [])
            let capture = try ReportFixtures.write(ReportFixtures.records(
                [.image(image)] + ReportFixtures.episode(1, at: 0, durationMs: 500, state: .busy,
                                                         samples: [[0x10_0040, 0x10_0080], [0x10_0100, 0x1f_ffff]])),
                name: "image")
            defer { try? FileManager.default.removeItem(atPath: capture) }
            try Self.expectNoTrap(capture)
        }
    }
}
