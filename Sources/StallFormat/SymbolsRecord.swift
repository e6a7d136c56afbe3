/// What one address of a capture resolves to, written by `stallprof symbolicate` so that the capture reads the same
/// on a machine without its binaries: the symbol containing it and its frames in the source, as found in the image
/// files (or their debug files) then.
public struct EmbeddedSymbol: Sendable, Equatable {
    /// The symbol's name as the symbol table has it (mangled for Swift); nil when no symbol contains the address.
    public var symbol: String?
    /// The address's offset in ``symbol``.
    public var offset: UInt64
    /// True when the symbol is a PLT entry (`name@plt`).
    public var isPLT: Bool
    /// The frames at the address, innermost first (the code's own function last), each with the function's name
    /// as the debug information has it; empty when the image had no line information for it.
    public var frames: [EmbeddedSourceFrame]

    /// Creates an entry.
    public init(symbol: String?, offset: UInt64 = 0, isPLT: Bool = false, frames: [EmbeddedSourceFrame] = []) {
        (self.symbol, self.offset, self.isPLT, self.frames) = (symbol, offset, isPLT, frames)
    }
}

/// One frame of an ``EmbeddedSymbol``: a function (nil when the debug information names none), its file (nil when
/// not known) and line (0 when not known).
public struct EmbeddedSourceFrame: Sendable, Equatable {
    /// The function's name as the debug information has it (a linkage name is mangled).
    public var function: String?
    /// The source file, as recorded (usually absolute).
    public var file: String?
    /// The line in ``file``.
    public var line: Int

    /// Creates a frame.
    public init(function: String?, file: String?, line: Int) {
        (self.function, self.file, self.line) = (function, file, line)
    }
}

/// A batch of resolved addresses (record type 14), keyed by the address looked up: a leaf frame's own address, a
/// return address less one (the call before it). Each record holds its own string table.
public struct SymbolsRecord: Sendable, Equatable {
    /// The entries by looked-up address.
    public var entries: [UInt64: EmbeddedSymbol]

    /// Entries per record when a table is split: about 1 MiB each, far below the reader's limit on one record.
    public static let entriesPerRecord = 16_384

    /// Creates a record.
    public init(entries: [UInt64: EmbeddedSymbol]) { self.entries = entries }

    /// The payload: `n:u32 n*string` (the strings), then `m:u32 m*entry`, each `address:u64 symbol:u32 offset:u64
    /// flags:u8 k:u32 k*(function:u32 file:u32 line:u32)`; a string field is an index into the strings plus one, 0
    /// for none; flags `1`: PLT entry. Entries by address.
    func encode(into out: inout [UInt8]) {
        var strings: [String] = [], index: [String: UInt32] = [:]
        func reference(_ string: String?) -> UInt32 {
            guard let string else { return 0 }
            if let known = index[string] { return known }
            strings.append(string)
            index[string] = UInt32(strings.count)
            return UInt32(strings.count)
        }
        var body: [UInt8] = []
        for (address, entry) in entries.sorted(by: { $0.key < $1.key }) {
            body.appendLE(address)
            body.appendLE(reference(entry.symbol))
            body.appendLE(entry.offset)
            body.append(entry.isPLT ? 1 : 0)
            body.appendLE(UInt32(entry.frames.count))
            for frame in entry.frames {
                body.appendLE(reference(frame.function))
                body.appendLE(reference(frame.file))
                body.appendLE(UInt32(clamping: frame.line))
            }
        }
        out.appendLE(UInt32(strings.count))
        for string in strings { out.appendString(string) }
        out.appendLE(UInt32(entries.count))
        out.append(contentsOf: body)
    }

    /// Reads the payload `encode` writes; a string index past the table is bad data.
    static func decode(_ c: inout ByteCursor) throws -> SymbolsRecord {
        let stringCount = Int(try c.u32())
        guard stringCount <= c.remaining / 4 else { throw c.error("string count \(stringCount) exceeds the record") }
        var strings: [String] = []
        strings.reserveCapacity(stringCount)
        for _ in 0..<stringCount { strings.append(try c.string()) }
        func string(_ cursor: inout ByteCursor) throws -> String? {
            let at = cursor.offset, reference = Int(try cursor.u32())
            guard reference <= strings.count else {
                throw CaptureFormatError(
                    source: cursor.source, offset: at,
                    reason: "string \(reference) of a symbols record that has \(strings.count)")
            }
            return reference == 0 ? nil : strings[reference - 1]
        }
        let count = Int(try c.u32())
        guard count <= c.remaining / 25 else { throw c.error("symbol count \(count) exceeds the record") }
        var entries: [UInt64: EmbeddedSymbol] = [:]
        entries.reserveCapacity(count)
        for _ in 0..<count {
            let address = try c.u64(), symbol = try string(&c), offset = try c.u64(), flags = try c.u8()
            let frameCount = Int(try c.u32())
            guard frameCount <= c.remaining / 12 else { throw c.error("frame count \(frameCount) exceeds the record") }
            var frames: [EmbeddedSourceFrame] = []
            for _ in 0..<frameCount {
                let function = try string(&c), file = try string(&c)
                frames.append(EmbeddedSourceFrame(function: function, file: file, line: Int(try c.u32())))
            }
            entries[address] = EmbeddedSymbol(symbol: symbol, offset: offset, isPLT: flags & 1 != 0, frames: frames)
        }
        return SymbolsRecord(entries: entries)
    }
}

/// When and from which files a capture was symbolicated (record type 13, before its ``SymbolsRecord``s), and the
/// app's modules as found in its executable then.
public struct SymbolicationRecord: Sendable, Equatable {
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
        out.appendLE(wallNs)
        out.appendLE(machine)
        out.appendLE(UInt32(appModules.count))
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

extension CaptureFormat {
    /// A capture file made of `records`, in order: the header, then each record framed (type, length, payload,
    /// CRC).
    public static func file(of records: [CaptureRecord]) -> [UInt8] {
        var bytes = header
        for record in records { record.encode(into: &bytes) }
        return bytes
    }

    /// What `stallprof symbolicate` writes: the capture `bytes` (already read without error by
    /// ``CaptureReader/records(_:source:)``) as they are, its header and every complete record byte for byte (also
    /// records of types this reader does not know), except its symbolication and symbols records, then
    /// `appending`. A record cut short at the end is left out.
    public static func file(copying bytes: [UInt8], appending records: [CaptureRecord]) -> [UInt8] {
        var out = Array(bytes.prefix(headerSize))
        var offset = headerSize
        let dropped: Set<UInt8> = [RecordType.symbolication.rawValue, RecordType.symbols.rawValue]
        while offset + recordPrefixSize <= bytes.count {
            let length = Int(bytes[offset + 1]) | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3]) << 16
                | Int(bytes[offset + 4]) << 24
            let end = offset + recordPrefixSize + length + recordSuffixSize
            guard length <= maxPayloadSize, end <= bytes.count else { break }
            if !dropped.contains(bytes[offset]) { out += bytes[offset..<end] }
            offset = end
        }
        for record in records { record.encode(into: &out) }
        return out
    }
}
