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
        var header = [UInt8](repeating: 0, count: ELFHeader.size)
        guard read(address, into: &header), let elf = ELFHeader(header) else { return nil }
        // The file's extent: its section headers (which the symbols need) or its program headers' file bytes,
        // whichever ends later.
        let sectionsEnd = elf.sectionHeaderOffset &+ UInt64(elf.sectionHeaderSize) &* UInt64(elf.sectionHeaderCount)
        let programEnd = elf.programHeaderOffset &+ UInt64(elf.programHeaderSize) &* UInt64(elf.programHeaderCount)
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
