import Testing

@testable import StallFormat

@Suite struct BuildIDTests {
    /// One ELF note: sizes, type, name and descriptor, each padded to `padding`.
    func note(type: UInt32, name: [UInt8], desc: [UInt8], padding: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.appendLE(UInt32(name.count))
        bytes.appendLE(UInt32(desc.count))
        bytes.appendLE(type)
        for field in [name, desc] {
            bytes += field
            bytes += [UInt8](repeating: 0, count: (padding - field.count % padding) % padding)
        }
        return bytes
    }

    @Test(arguments: [4, 8])
    func findsTheGNUBuildIDAfterOtherNotes(padding: Int) {
        let gnu: [UInt8] = [0x47, 0x4e, 0x55, 0]
        let property = note(type: 5, name: gnu, desc: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], padding: padding)
        let id = note(type: 3, name: gnu, desc: [0xab, 0xcd, 0xef], padding: padding)
        let notes = property + id
        #expect(notes.withUnsafeBytes { BuildID.find(inNotes: $0, alignment: padding) } == [0xab, 0xcd, 0xef])
    }

    @Test func truncatedOrForeignNotesGiveNothing() {
        let id = note(type: 3, name: [0x47, 0x4e, 0x55, 0], desc: [1, 2, 3, 4], padding: 4)
        #expect(Array(id.dropLast(2)).withUnsafeBytes { BuildID.find(inNotes: $0, alignment: 4) }.isEmpty)
        let other = note(type: 3, name: [0x58, 0x59, 0x5a, 0], desc: [1, 2, 3, 4], padding: 4)
        #expect(other.withUnsafeBytes { BuildID.find(inNotes: $0, alignment: 4) }.isEmpty)
        #expect([UInt8]().withUnsafeBytes { BuildID.find(inNotes: $0, alignment: 4) }.isEmpty)
    }
}
