import Foundation
import Testing

@testable import StallFormat

/// The one Swift reader of ELF file headers.
@Suite struct ELFHeaderTests {
    @Test func theELFHeaderOfThisExecutableIsRead() throws {
        let bytes = try FileReader(path: "/proc/self/exe").bytes(at: 0, count: ELFHeader.size)
        let header = try #require(ELFHeader(bytes))
        #if arch(x86_64)
        #expect(header.machine == 62)
        #elseif arch(arm64)
        #expect(header.machine == 183)
        #endif
        #expect(header.programHeaderOffset == 64 && header.programHeaderSize == 56 && header.programHeaderCount > 0)
        #expect(header.sectionHeaderSize == 64 && header.sectionNamesIndex < header.sectionHeaderCount)
    }

    @Test func anythingButA64BitLittleEndianELFHeaderIsRefused() {
        var header = [UInt8](repeating: 0, count: ELFHeader.size)
        header.replaceSubrange(0..<6, with: [0x7f, 0x45, 0x4c, 0x46, 2, 1])
        header[0x20] = 0x40
        #expect(ELFHeader(header)?.programHeaderOffset == 0x40)
        #expect(ELFHeader(Array(header.prefix(63))) == nil)  // cut short
        var elf32 = header
        elf32[4] = 1
        #expect(ELFHeader(elf32) == nil)
        var bigEndian = header
        bigEndian[5] = 2
        #expect(ELFHeader(bigEndian) == nil)
        #expect(ELFHeader(Array("STALLPRF".utf8) + header.dropFirst(8)) == nil)
    }

    @Test func theMachineIsReadFromAnELFFileOfEitherClass() {
        var elf32 = [UInt8](repeating: 0, count: 52)
        elf32.replaceSubrange(0..<6, with: [0x7f, 0x45, 0x4c, 0x46, 1, 1])
        elf32[0x12] = 40  // EM_ARM
        #expect(ELFHeader(elf32) == nil, "the full header reader takes 64-bit files only")
        #expect(ELFHeader.machine(elf32) == 40)
        #expect(ELFHeader.machine(Array(elf32.prefix(19))) == nil)
        #expect(ELFHeader.machine(Array("STALLPRF".utf8) + elf32.dropFirst(8)) == nil)
    }
}
