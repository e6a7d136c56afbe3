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
public struct SymbolsRecord: Sendable, Equatable, RecordCoding {
    static let recordType = CaptureFormat.RecordType.symbols
    var captureRecord: CaptureRecord { .symbols(self) }

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
            body.appendLE(address, reference(entry.symbol), entry.offset, UInt8(entry.isPLT ? 1 : 0),
                          UInt32(entry.frames.count))
            for frame in entry.frames {
                body.appendLE(reference(frame.function), reference(frame.file), UInt32(clamping: frame.line))
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
