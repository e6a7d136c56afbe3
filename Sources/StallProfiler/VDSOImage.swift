import CStallCapture
import Glibc
import StallFormat

/// The vDSO's bytes, for the capture: the kernel maps it into the process as a whole ELF file but it exists on no
/// disk, so the analyzer could not name its frames (`[vdso]`) without this copy. Read with process_vm_readv (a bad
/// header can never fault), once, when the watchdog starts.
enum VDSOImage {
    /// The copy, or nil when the process has no vDSO or its header does not describe an ELF file that fits in
    /// ``ImageContentsRecord/maxBytes``.
    static func current() -> ImageContentsRecord? {
        let address = stallcap_vdso_address()
        guard address != 0 else { return nil }
        var header = [UInt8](repeating: 0, count: 64)
        guard read(address, into: &header), header.starts(with: [0x7f, 0x45, 0x4c, 0x46, 2, 1]) else { return nil }
        // The file's extent: its section headers (which the symbols need) or its program headers' file bytes,
        // whichever ends later.
        func field<T: FixedWidthInteger>(_ offset: Int, _: T.Type) -> UInt64 {
            UInt64(header[offset..<offset + MemoryLayout<T>.size].reversed().reduce(T(0)) { $0 << 8 | T($1) })
        }
        let sectionsEnd = field(0x28, UInt64.self) &+ field(0x3A, UInt16.self) &* field(0x3C, UInt16.self)
        let programEnd = field(0x20, UInt64.self) &+ field(0x36, UInt16.self) &* field(0x38, UInt16.self)
        let size = max(sectionsEnd, programEnd)
        guard size >= 64, size <= UInt64(ImageContentsRecord.maxBytes) else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(size))
        guard read(address, into: &bytes) else { return nil }
        return ImageContentsRecord(address: address, path: "linux-vdso.so.1", bytes: bytes)
    }

    private static func read(_ address: UInt64, into buffer: inout [UInt8]) -> Bool {
        buffer.withUnsafeMutableBytes { stallcap_read_memory(address, $0.baseAddress, $0.count) == 0 }
    }
}
