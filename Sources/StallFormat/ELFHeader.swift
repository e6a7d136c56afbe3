/// The fields of a 64-bit little-endian ELF file header (`Elf64_Ehdr`) that stallprof reads: where the program
/// and section header tables are, and the machine. Read by the watchdog (images found in /proc/self/maps, the
/// vDSO's extent) and the symbolizer (section headers), from a file's or a memory copy's first
/// ``ELFHeader/size`` bytes.
public struct ELFHeader: Sendable, Equatable {
    /// Bytes of the header.
    public static let size = 64

    /// `e_machine`: 62 x86_64, 183 aarch64.
    public var machine: UInt16
    /// `e_phoff`: file offset of the program header table.
    public var programHeaderOffset: UInt64
    /// `e_phentsize`: bytes of one program header.
    public var programHeaderSize: UInt16
    /// `e_phnum`: how many program headers.
    public var programHeaderCount: UInt16
    /// `e_shoff`: file offset of the section header table.
    public var sectionHeaderOffset: UInt64
    /// `e_shentsize`: bytes of one section header.
    public var sectionHeaderSize: UInt16
    /// `e_shnum`: how many section headers.
    public var sectionHeaderCount: UInt16
    /// `e_shstrndx`: the index of the section holding the sections' names.
    public var sectionNamesIndex: UInt16

    /// Reads the header at the start of `bytes`; nil when they are fewer than ``size`` or do not start with the
    /// identification of a 64-bit little-endian ELF file (`\x7fELF`, class 2, data 1).
    public init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= Self.size, bytes.starts(with: [0x7f, 0x45, 0x4c, 0x46, 2, 1]) else { return nil }
        func field<T: FixedWidthInteger>(_ offset: Int, _: T.Type) -> T {
            T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
        }
        machine = field(0x12, UInt16.self)
        programHeaderOffset = field(0x20, UInt64.self)
        sectionHeaderOffset = field(0x28, UInt64.self)
        programHeaderSize = field(0x36, UInt16.self)
        programHeaderCount = field(0x38, UInt16.self)
        sectionHeaderSize = field(0x3A, UInt16.self)
        sectionHeaderCount = field(0x3C, UInt16.self)
        sectionNamesIndex = field(0x3E, UInt16.self)
    }

    /// `e_machine` of an ELF file of either class (32 or 64 bits) whose first bytes are `bytes`: at the same offset
    /// in both; nil when `bytes` are fewer than 20 or do not start with `\x7fELF`.
    public static func machine(_ bytes: [UInt8]) -> UInt16? {
        guard bytes.count >= 20, bytes.starts(with: [0x7f, 0x45, 0x4c, 0x46]) else { return nil }
        return UInt16(bytes[0x12]) | UInt16(bytes[0x13]) << 8
    }

    /// Reads the header at the start of `bytes`, as ``init(_:)-(UnsafeRawBufferPointer)`` does.
    public init?(_ bytes: [UInt8]) {
        guard let header = bytes.withUnsafeBytes({ ELFHeader($0) }) else { return nil }
        self = header
    }
}
