/// One loaded image (executable or shared library), so that addresses can be resolved later from the file alone.
public struct ImageRecord: Sendable, Equatable, Hashable {
    /// Path of the ELF file.
    public var path: String
    /// Runtime address minus ELF virtual address.
    public var loadBias: UInt64
    /// Lowest runtime address of the image's loaded segments.
    public var start: UInt64
    /// End (exclusive) of the image's loaded segments.
    public var end: UInt64
    /// GNU build-id bytes; empty when the image has none.
    public var buildID: [UInt8]

    /// Creates an image record.
    public init(path: String, loadBias: UInt64, start: UInt64, end: UInt64, buildID: [UInt8]) {
        (self.path, self.loadBias, self.start, self.end, self.buildID) = (path, loadBias, start, end, buildID)
    }

    /// The build-id as lowercase hex, as `file` and `readelf -n` print it.
    public var buildIDHex: String {
        buildID.map { byte in
            let digits = Array("0123456789abcdef")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
        }.joined()
    }
}

extension ImageRecord: RecordCoding {
    static let recordType = CaptureFormat.RecordType.image
    var captureRecord: CaptureRecord { .image(self) }

    /// `loadBias:u64 start:u64 end:u64 buildID:bytes path:string`.
    func encode(into out: inout [UInt8]) {
        out.appendLE(loadBias, start, end)
        out.appendBytes(buildID)
        out.appendString(path)
    }

    static func decode(_ c: inout ByteCursor) throws -> ImageRecord {
        let bias = try c.u64(), start = try c.u64(), end = try c.u64(), buildID = try c.byteField()
        return ImageRecord(path: try c.string(), loadBias: bias, start: start, end: end, buildID: buildID)
    }
}
