#if canImport(Glibc)
import Glibc
#endif

/// A capture file that cannot be read: not a capture, an unknown version, or corrupt before its end.
public struct CaptureFormatError: Error, CustomStringConvertible {
    /// The file concerned.
    public var source: String
    /// Byte offset of the problem.
    public var offset: Int
    /// What is wrong.
    public var reason: String
    /// `source: byte N: reason`.
    public var description: String { "\(source): byte \(offset): \(reason)" }

    /// Creates an error.
    public init(source: String, offset: Int, reason: String) {
        self.source = source
        self.offset = offset
        self.reason = reason
    }
}

/// Reads capture files. A record cut short at the end of the file (the process was killed while writing) is
/// dropped with a warning; anything wrong before that point is a ``CaptureFormatError``.
public enum CaptureReader {
    /// True when `prefix` starts like a capture file.
    public static func looksLikeCapture(_ prefix: some Collection<UInt8>) -> Bool {
        prefix.starts(with: CaptureFormat.magic)
    }

    /// Reads and parses the file at `path`.
    public static func read(path: String) throws -> Capture {
        try parse(readWholeFile(path), source: path)
    }

    /// Reads a whole capture file into memory; a missing or unreadable file throws ``CaptureFormatError`` (at the
    /// offset where reading failed). For any other file (`/proc`, journals, ELF images) use ``FileReader``, whose
    /// errors are not capture format errors.
    public static func readWholeFile(_ path: String) throws -> [UInt8] {
        do {
            return try FileReader.contents(of: path)
        } catch let error as FileReadError {
            throw CaptureFormatError(source: path, offset: error.offset, reason: error.reason)
        }
    }

    /// Why a second header or process record is an error: the file holds two captures.
    static let mixed = "two captures in one file (two processes wrote it, or files were joined); they are not read as "
        + "one. Give each process its own file (STALLPROF_OUTPUT=app-%p.stalls)"

    /// Decodes every complete record of `bytes`, in file order. A second header or process record is an error
    /// naming its byte offset: the file holds two captures, which are never merged into one. Returns the records and a warning when the last
    /// record is cut short.
    public static func records(_ bytes: [UInt8], source: String) throws -> (records: [CaptureRecord], warning: String?) {
        guard bytes.count >= CaptureFormat.headerSize, looksLikeCapture(bytes) else {
            let reason = bytes.isEmpty ? "empty file, not a stallprof capture"
                : looksLikeCapture(bytes) ? "the capture's \(CaptureFormat.headerSize)-byte header is cut short (\(bytes.count) bytes)"
                : "not a stallprof capture (no STALLPRF header)"
            throw CaptureFormatError(source: source, offset: looksLikeCapture(bytes) ? bytes.count : 0, reason: reason)
        }
        var cursor = ByteCursor(bytes: bytes, offset: 8, source: source)
        let version = try cursor.u16()
        guard CaptureFormat.readableVersions.contains(version) else {
            let known = CaptureFormat.readableVersions
            throw CaptureFormatError(source: source, offset: 8, reason: "capture format version \(version) is not supported (this stallprof reads versions \(known.lowerBound) to \(known.upperBound))")
        }
        var records: [CaptureRecord] = []
        var offset = CaptureFormat.headerSize
        var processID: Int32? = nil
        while offset < bytes.count {
            let remaining = bytes.count - offset
            // No record starts with the magic (its length would be implausible): another capture starts here.
            if bytes[offset...].starts(with: CaptureFormat.magic) {
                throw CaptureFormatError(source: source, offset: offset, reason: "a second capture header: " + mixed)
            }
            let cut = "capture ends inside a record (the process was probably killed); read \(records.count) complete records"
            guard remaining >= CaptureFormat.recordPrefixSize else { return (records, "\(source): byte \(offset): \(cut)") }
            var prefix = ByteCursor(bytes: bytes, offset: offset + 1, source: source)
            let length = Int(try prefix.u32())
            guard length <= CaptureFormat.maxPayloadSize else {
                throw CaptureFormatError(source: source, offset: offset, reason: "record length \(length) is implausible (corrupt file)")
            }
            let total = CaptureFormat.recordPrefixSize + length + CaptureFormat.recordSuffixSize
            guard remaining >= total else { return (records, "\(source): byte \(offset): \(cut)") }
            let stored = UInt32(bytes[offset + total - 4]) | UInt32(bytes[offset + total - 3]) << 8
                | UInt32(bytes[offset + total - 2]) << 16 | UInt32(bytes[offset + total - 1]) << 24
            let computed = bytes.withUnsafeBytes {
                CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[offset..<(offset + total - 4)]))
            }
            guard stored == computed else {
                throw CaptureFormatError(source: source, offset: offset, reason: "record checksum mismatch (corrupt file)")
            }
            let payload = ByteCursor(bytes: bytes, offset: offset + CaptureFormat.recordPrefixSize, source: source,
                                     limit: offset + CaptureFormat.recordPrefixSize + length)
            if let record = try CaptureRecord.decode(type: bytes[offset], payload: payload) {
                if case .process(let process) = record {
                    if let first = processID {
                        throw CaptureFormatError(
                            source: source, offset: offset,
                            reason: "a second process record (pid \(process.pid), after pid \(first)): " + mixed)
                    }
                    processID = process.pid
                }
                records.append(record)
            }
            offset += total
        }
        return (records, nil)
    }

    /// Parses a whole capture into stalls and samples.
    public static func parse(_ bytes: [UInt8], source: String) throws -> Capture {
        let (records, warning) = try records(bytes, source: source)
        var capture = Capture(source: source)
        if let warning { capture.warnings.append(warning) }
        var stallIndex: [UInt32: Int] = [:]
        var seenImages = Set<ImageRecord>()
        var markers = MarkerCollector()
        for record in records {
            switch record {
            case .process(let p): capture.process = p
            case .image(let image):
                if seenImages.insert(image).inserted { capture.images.append(image) }
            case .stallBegin(let begin):
                stallIndex[begin.stallID] = capture.stalls.count
                capture.stalls.append(Stall(begin: begin))
            case .sample(let s):
                guard let index = stallIndex[s.stallID] else { continue }
                var sample = s.sample
                if s.flags.contains(.repeated), let previous = capture.stalls[index].samples.last {
                    // The same stack again, so just as incomplete when that one was cut short. Not the same turn:
                    // the thread made too little progress to be signalled, yet may have run a short block or two.
                    sample.frames = previous.frames
                    if previous.flags.contains(.truncated) { sample.flags.insert(.truncated) }
                } else if s.flags.contains(.repeated) {
                    sample.frames = []
                }
                capture.stalls[index].samples.append(sample)
            case .stallEnd(let end):
                if let index = stallIndex[end.stallID] { capture.stalls[index].end = end }
            case .blockedOn(let blocked):
                if let index = stallIndex[blocked.stallID] { capture.stalls[index].blockedOn = blocked }
            case .dropped(let dropped):
                capture.drops.append(dropped)
                capture.warnings.append(
                    "\(source): \(dropped.sampleCount) samples and \(dropped.otherCount) other records were dropped over "
                        + "\((dropped.lastNs &- dropped.firstNs) / 1_000_000) ms: the file did not accept writes "
                        + "(disk full or file size limit)")
            case .marker(let marker):
                markers.add(marker)
            case .signalMask(let mask):
                // The first look of the episode (one is written per episode).
                if let index = stallIndex[mask.stallID], capture.stalls[index].signalMask == nil {
                    capture.stalls[index].signalMask = mask
                }
            case .threads(let threads):
                if let index = stallIndex[threads.stallID] { capture.stalls[index].threads.append(threads) }
            case .imageContents(let contents):
                if !capture.imageContents.contains(contents) { capture.imageContents.append(contents) }
            case .symbolication(let symbolication):
                capture.symbolication = symbolication
            case .symbols(let symbols):
                capture.symbols.merge(symbols.entries) { _, new in new }
            case .close(let timestampNs):
                capture.closedCleanly = true
                capture.closedAtNs = timestampNs
            }
        }
        capture.markers = markers.sorted
        capture.droppedMarkers = markers.dropped
        capture.droppedMarkersByThread = markers.droppedByThread.filter { $0.value > 0 }
        if markers.dropped > 0 {
            capture.warnings.append("\(source): \(markers.dropped) app markers were lost (the app marked faster than "
                + "the watchdog drained them)" + Self.lostByThread(capture.droppedMarkersByThread))
        }
        return capture
    }

    /// `: 2950 of thread 1234, 3 of thread 1` (most first), or nothing when only unattributed losses (tid 0) are
    /// known.
    static func lostByThread(_ lost: [Int32: UInt64]) -> String {
        guard lost.keys.contains(where: { $0 != 0 }) else { return "" }
        let shown = lost.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.prefix(5).map { tid, count in
            tid == 0 ? "\(count) of threads without a ring of their own" : "\(count) of thread \(tid)"
        }
        return ": " + shown.joined(separator: ", ") + (lost.count > 5 ? ", and of \(lost.count - 5) more threads" : "")
    }
}
