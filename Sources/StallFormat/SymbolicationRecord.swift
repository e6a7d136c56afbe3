/// app's modules as found in its executable then.
public struct SymbolicationRecord: Sendable, Equatable, RecordCoding {
    static let recordType = CaptureFormat.RecordType.symbolication
    var captureRecord: CaptureRecord { .symbolication(self) }

    /// One image: the file its symbols were read from and the file its lines were read from (empty: none).
    public struct Source: Sendable, Equatable {
        /// The image's path in the capture.
        public var image: String
        /// The file its symbols came from: the image itself, or a debug file found by build-id; empty: none.
        public var symbols: String
        /// The file its line information came from; empty: none (its frames have no lines).
        public var lines: String

        /// Creates a source.
        public init(image: String, symbols: String, lines: String) {
            (self.image, self.symbols, self.lines) = (image, symbols, lines)
        }
    }

    /// When, wall clock (Unix epoch nanoseconds).
    public var wallNs: UInt64
    /// The executable's machine (ELF `e_machine`: 62 x86_64, 183 aarch64); 0 when it could not be read.
    public var machine: UInt16
    /// The app's Swift modules, found in the executable's symbols; empty when none could be told.
    public var appModules: [String]
    /// The images that frames of the capture are in, in capture order.
    public var sources: [Source]

    /// Creates a record.
    public init(wallNs: UInt64, machine: UInt16, appModules: [String], sources: [Source]) {
        (self.wallNs, self.machine, self.appModules, self.sources) = (wallNs, machine, appModules, sources)
    }

    /// The payload: `wallNs:u64 machine:u16 n:u32 n*module:string m:u32 m*(image:string symbols:string lines:string)`.
    func encode(into out: inout [UInt8]) {
        out.appendLE(wallNs, machine, UInt32(appModules.count))
        for module in appModules { out.appendString(module) }
        out.appendLE(UInt32(sources.count))
        for source in sources {
            out.appendString(source.image)
            out.appendString(source.symbols)
            out.appendString(source.lines)
        }
    }

    /// Reads the payload `encode` writes.
    static func decode(_ c: inout ByteCursor) throws -> SymbolicationRecord {
        let wall = try c.u64(), machine = try c.u16(), moduleCount = Int(try c.u32())
        guard moduleCount <= c.remaining / 4 else { throw c.error("module count \(moduleCount) exceeds the record") }
        var modules: [String] = []
        for _ in 0..<moduleCount { modules.append(try c.string()) }
        let sourceCount = Int(try c.u32())
        guard sourceCount <= c.remaining / 12 else { throw c.error("image count \(sourceCount) exceeds the record") }
        var sources: [Source] = []
        for _ in 0..<sourceCount {
            sources.append(Source(image: try c.string(), symbols: try c.string(), lines: try c.string()))
        }
        return SymbolicationRecord(wallNs: wall, machine: machine, appModules: modules, sources: sources)
    }
}
