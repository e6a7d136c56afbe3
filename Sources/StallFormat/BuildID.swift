/// The GNU build-id of an ELF file, which ties a capture's image records to the exact files they were loaded
/// from. Shared by the watchdog (which records it) and the symbolizer (which checks it).
public enum BuildID {
    /// The `NT_GNU_BUILD_ID` descriptor in a block of ELF notes, or empty when there is none. `alignment` is the
    /// note section's or segment's alignment: notes are padded to 8 bytes in 8-aligned blocks, else to 4.
    public static func find(inNotes notes: UnsafeRawBufferPointer, alignment: Int) -> [UInt8] {
        let padding = alignment == 8 ? 8 : 4
        func padded(_ n: Int) -> Int { (n + padding - 1) / padding * padding }
        func u32(_ at: Int) -> Int { Int(notes.loadUnaligned(fromByteOffset: at, as: UInt32.self).littleEndian) }
        var at = 0
        while at + 12 <= notes.count {
            let nameSize = u32(at), descSize = u32(at + 4), type = u32(at + 8)
            let desc = at + 12 + padded(nameSize), next = desc + padded(descSize)
            guard nameSize >= 0, descSize >= 0, desc + descSize <= notes.count, next > at else { return [] }
            // NT_GNU_BUILD_ID (3), owner "GNU\0".
            if type == 3, nameSize == 4, u32(at + 12) == 0x0055_4e47 { return Array(notes[desc..<(desc + descSize)]) }
            at = next
        }
        return []
    }
}
