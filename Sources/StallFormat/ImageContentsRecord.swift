/// The bytes of an image that has no file to read later, copied from memory: the vDSO (the kernel maps it into
/// every process; `perf` copies it too). The analyzer reads its symbols from these bytes, so its frames get names
/// (`__vdso_clock_gettime`) instead of `[vdso]`, on any machine.
public struct ImageContentsRecord: Sendable, Equatable {
    /// Where the bytes were mapped in the process: inside the range of the ``ImageRecord`` they belong to.
    public var address: UInt64
    /// The image's name as the loader gave it (`linux-vdso.so.1`).
    public var path: String
    /// The image as mapped (an ELF file: the vDSO is mapped whole).
    public var bytes: [UInt8]

    /// Largest image copied: a vDSO is 8 KiB on x86_64 and aarch64.
    public static let maxBytes = 256 * 1024

    /// Creates a record.
    public init(address: UInt64, path: String, bytes: [UInt8]) {
        (self.address, self.path, self.bytes) = (address, path, bytes)
    }
}

extension ImageContentsRecord: RecordCoding {
    static let recordType = CaptureFormat.RecordType.imageContents
    var captureRecord: CaptureRecord { .imageContents(self) }

    /// `address:u64 path:string bytes:bytes`; more than ``maxBytes`` bytes is bad data.
    func encode(into out: inout [UInt8]) {
        out.appendLE(address)
        out.appendString(path)
        out.appendBytes(bytes)
    }

    static func decode(_ c: inout ByteCursor) throws -> ImageContentsRecord {
        let address = try c.u64(), path = try c.string()
        let field = c.offset  // the error names where the bytes field starts
        let bytes = try c.byteField()
        guard bytes.count <= maxBytes else {
            throw CaptureFormatError(
                source: c.source, offset: field, reason: "image contents of \(bytes.count) bytes (at most \(maxBytes))")
        }
        return ImageContentsRecord(address: address, path: path, bytes: bytes)
    }
}
