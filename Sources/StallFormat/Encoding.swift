/// Byte-level encoding of capture records (little-endian, length-prefixed strings), shared by the writer and the
/// reader. See docs/FORMAT.md.

/// Constants of the capture file format.
public enum CaptureFormat {
    /// The eight bytes every capture starts with.
    public static let magic: [UInt8] = Array("STALLPRF".utf8)
    /// The format version this library writes.
    public static let version: UInt16 = 2
    /// The versions the reader accepts: 1 (stalls only) and 2 (episode kinds, blocked-on records).
    public static let readableVersions: ClosedRange<UInt16> = 1...2
    /// Header size in bytes: magic, version, reserved.
    public static let headerSize = 16
    /// Bytes before a record's payload: type (1) and payload length (4).
    public static let recordPrefixSize = 5
    /// Bytes after a record's payload: CRC-32 of type, length and payload.
    public static let recordSuffixSize = 4
    /// Largest payload a reader accepts (a sample of 256 frames needs about 2 KiB).
    public static let maxPayloadSize = 16 << 20

    /// Record type codes.
    enum RecordType: UInt8 {
        case process = 1, image = 2, stallBegin = 3, sample = 4, stallEnd = 5, close = 6, blockedOn = 7, dropped = 8, marker = 9
        case signalMask = 10, threads = 11, imageContents = 12, symbolication = 13, symbols = 14
    }

    /// The file header: magic, version, two reserved bytes, four reserved bytes.
    static var header: [UInt8] {
        var bytes = magic
        bytes.appendLE(version)
        bytes.appendLE(UInt16(0))
        bytes.appendLE(UInt32(0))
        return bytes
    }
}

extension Array where Element == UInt8 {
    mutating func appendLE<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }

    mutating func appendString(_ value: String) {
        let utf8 = Array(value.utf8)
        appendLE(UInt32(utf8.count))
        append(contentsOf: utf8)
    }

    /// A frame list: a count, then the addresses.
    mutating func appendFrames(_ frames: [UInt64]) {
        appendLE(UInt32(frames.count))
        for frame in frames { appendLE(frame) }
    }

    mutating func appendBytes(_ value: [UInt8]) {
        appendLE(UInt32(value.count))
        append(contentsOf: value)
    }
}

/// CRC-32 (IEEE 802.3, the polynomial of zlib and PNG).
enum CRC32 {
    static let table: [UInt32] = (0..<256).map { index in
        var c = UInt32(index)
        for _ in 0..<8 { c = (c & 1) != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}

extension CaptureRecord {
    /// Appends the framed record (type, length, payload, CRC) to `out`.
    func encode(into out: inout [UInt8]) {
        let recordStart = out.count
        out.append(0)
        out.appendLE(UInt32(0))
        let payloadStart = out.count
        let type: CaptureFormat.RecordType
        switch self {
        case .process(let p):
            type = .process
            out.appendLE(p.pid)
            out.appendLE(p.startMonotonicNs)
            out.appendLE(p.startWallNs)
            out.appendLE(p.thresholdNs)
            out.appendLE(p.sampleIntervalNs)
            out.appendString(p.executable)
        case .image(let i):
            type = .image
            out.appendLE(i.loadBias)
            out.appendLE(i.start)
            out.appendLE(i.end)
            out.appendBytes(i.buildID)
            out.appendString(i.path)
        case .stallBegin(let b):
            type = .stallBegin
            out.appendLE(b.stallID)
            out.appendLE(b.startNs)
            out.appendLE(b.detectedNs)
            out.appendLE(b.threadID)
            out.append(b.kind.rawValue)
        case .sample(let s):
            type = .sample
            out.appendLE(s.stallID)
            out.appendLE(s.timestampNs)
            out.appendLE(s.threadCPUNs)
            out.appendLE(s.runQueueNs)
            out.appendLE(s.flags.rawValue)
            out.appendFrames(s.frames)
            out.appendLE(s.turn)
        case .stallEnd(let e):
            type = .stallEnd
            out.appendLE(e.stallID)
            out.appendLE(e.endNs)
            out.appendLE(e.cpuNs)
            out.appendLE(e.runQueueNs)
            out.appendLE(e.measuredNs)
            out.append(e.state.rawValue)
            out.appendLE(e.sampleCount)
            out.appendLE(e.missedCount)
            out.appendLE(e.pausedNs)
            if let missedWait = e.missedRunQueueNs { out.appendLE(missedWait) }
        case .blockedOn(let b):
            type = .blockedOn
            out.appendLE(b.stallID)
            out.appendLE(b.timestampNs)
            out.append(b.waitKind.rawValue)
            out.appendLE(b.syscall)
            out.appendLE(b.argument)
            out.appendLE(b.ownerTID)
            out.append(b.ownerState)
            out.appendLE(b.ownerSyscall)
            out.appendLE(b.ownerFlags.rawValue)
            out.appendString(b.ownerName)
            out.appendString(b.detail)
            out.appendFrames(b.ownerFrames)
            out.appendString(b.queueLabel)
        case .dropped(let d):
            type = .dropped
            out.appendLE(d.sampleCount)
            out.appendLE(d.otherCount)
            out.appendLE(d.firstNs)
            out.appendLE(d.lastNs)
        case .marker(let m):
            type = .marker
            out.append(m.kind.rawValue)
            out.appendLE(m.spanID)
            out.appendLE(m.threadID)
            out.appendLE(m.timestampNs)
            out.appendString(m.name)
        case .signalMask(let m):
            type = .signalMask
            out.appendLE(m.stallID)
            out.appendLE(m.timestampNs)
            out.appendLE(m.threadID)
            out.appendLE(m.signal)
            out.appendLE(m.blockedMask)
        case .threads(let t):
            type = .threads
            t.encode(into: &out)
        case .imageContents(let image):
            type = .imageContents
            out.appendLE(image.address)
            out.appendString(image.path)
            out.appendBytes(image.bytes)
        case .symbolication(let symbolication):
            type = .symbolication
            symbolication.encode(into: &out)
        case .symbols(let symbols):
            type = .symbols
            symbols.encode(into: &out)
        case .close(let timestampNs):
            type = .close
            out.appendLE(timestampNs)
        }
        let length = UInt32(out.count - payloadStart)
        out[recordStart] = type.rawValue
        withUnsafeBytes(of: length.littleEndian) { bytes in
            for k in 0..<4 { out[recordStart + 1 + k] = bytes[k] }
        }
        let crc = out.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[recordStart...])) }
        out.appendLE(crc)
    }
}
