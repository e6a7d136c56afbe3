#if canImport(Glibc)
import Glibc
#endif
import StallFormat

/// The function symbols of one ELF file (`.symtab`, else `.dynsym`) and its GNU build-id, read through a
/// read-only memory map so that large libraries cost no copying.
final class ELFSymbols {
    /// The file.
    let path: String
    /// GNU build-id from the file's notes; empty when it has none.
    private(set) var buildID: [UInt8] = []
    /// True when the file had a full `.symtab` (unstripped).
    private(set) var hasFullSymbolTable = false

    private var base: UnsafeRawPointer?
    private var size = 0
    /// True when `base` was allocated (an image from a capture's bytes), false when it maps a file.
    private var allocated = false
    /// Function symbols sorted by address: start, end (exclusive), and the file offset of the name.
    private var starts: [UInt64] = []
    private var ends: [UInt64] = []
    private var nameOffsets: [Int] = []
    /// The symbol table read (`.symtab`, else `.dynsym`): file offset, size, entry size; its string table's
    /// offset and size. Nil when the file has none.
    private var table: (offset: Int, size: Int, entrySize: Int, strings: Int, stringsSize: Int)?

    /// Maps and parses `path`; nil when it cannot be opened or is not a 64-bit little-endian ELF file.
    init?(path: String) {
        self.path = path
        // Paths come from capture files: a FIFO or a device there must not block the reader (O_NONBLOCK), and
        // only a regular file is mapped.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size >= 64 else { return nil }
        size = Int(info.st_size)
        guard let map = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), map != MAP_FAILED else { return nil }
        base = UnsafeRawPointer(map)
        guard parse() else { return nil }
    }

    /// Parses an image copied from memory (``ImageContentsRecord``); `path` names it. Nil when the bytes are not
    /// a 64-bit little-endian ELF file.
    init?(bytes: [UInt8], path: String) {
        self.path = path
        guard bytes.count >= 64 else { return nil }
        let copy = UnsafeMutableRawPointer.allocate(byteCount: bytes.count, alignment: 16)
        bytes.withUnsafeBytes { copy.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
        allocated = true
        base = UnsafeRawPointer(copy)
        size = bytes.count
        guard parse() else { return nil }
    }

    deinit {
        guard let base else { return }
        if allocated { UnsafeMutableRawPointer(mutating: base).deallocate() } else { munmap(UnsafeMutableRawPointer(mutating: base), size) }
    }

    private func u16(_ offset: Int) -> UInt16 { base!.loadUnaligned(fromByteOffset: offset, as: UInt16.self) }
    private func u32(_ offset: Int) -> UInt32 { base!.loadUnaligned(fromByteOffset: offset, as: UInt32.self) }
    private func u64(_ offset: Int) -> UInt64 { base!.loadUnaligned(fromByteOffset: offset, as: UInt64.self) }

    private func parse() -> Bool {
        guard let base else { return false }
        guard let header = ELFHeader(UnsafeRawBufferPointer(start: base, count: size)) else { return false }
        // Every offset and size comes from the file: converted with clamping, compared without overflow, so a
        // corrupt file (a section table past the end, sizes near 2^64) is rejected or ignored, never a trap.
        let sectionTable = Int(clamping: header.sectionHeaderOffset)
        let entrySize = Int(header.sectionHeaderSize), count = Int(header.sectionHeaderCount)
        guard entrySize >= 64, sectionTable > 0, sectionTable <= size, count * entrySize <= size - sectionTable
        else { return false }
        let sections = (0..<count).map { index -> Section in
            let at = sectionTable + index * entrySize
            return Section(name: Int(u32(at)), type: u32(at + 4), address: u64(at + 16),
                           offset: Int(clamping: u64(at + 24)), size: Int(clamping: u64(at + 32)),
                           link: Int(u32(at + 40)), alignment: Int(clamping: u64(at + 48)),
                           entrySize: Int(clamping: u64(at + 56)))
        }
        func fits(_ s: Section) -> Bool { Self.fits(s, in: size) }
        for note in sections where note.type == 7 && fits(note) && buildID.isEmpty {  // SHT_NOTE
            let notes = UnsafeRawBufferPointer(start: base + note.offset, count: note.size)
            buildID = BuildID.find(inNotes: notes, alignment: note.alignment)
        }
        addPLTStubs(sections, names: Int(header.sectionNamesIndex))
        let symtab = sections.first { $0.type == 2 && fits($0) }  // SHT_SYMTAB
        let dynsym = sections.first { $0.type == 11 && fits($0) }  // SHT_DYNSYM
        hasFullSymbolTable = symtab != nil
        guard let table = symtab ?? dynsym, table.link < sections.count, fits(sections[table.link]) else { return true }
        let strings = sections[table.link]
        let symbolSize = (24...4096).contains(table.entrySize) ? table.entrySize : 24  // a corrupt size: the standard one
        self.table = (table.offset, table.size, symbolSize, strings.offset, strings.size)
        // (start, size, end of the symbol's section, name offset)
        var entries = pltEntries
        for at in stride(from: table.offset, to: table.offset + table.size - 23, by: symbolSize) {
            let kind = base.load(fromByteOffset: at + 4, as: UInt8.self) & 0xf
            guard kind == 2 || kind == 10 else { continue }  // STT_FUNC, STT_GNU_IFUNC
            let value = u64(at + 8)
            let name = Int(u32(at))
            let section = Int(u16(at + 6))
            guard value != 0, name < strings.size, section > 0, section < sections.count else { continue }
            let sectionEnd = Self.adding(sections[section].address, UInt64(sections[section].size))
            entries.append((value, u64(at + 16), sectionEnd, strings.offset + name))
        }
        entries.sort { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 > $1.1 }
        pltEntries = []
        starts = entries.map(\.0)
        nameOffsets = entries.map(\.3)
        // A symbol without a size (Swift's `main`, assembly labels) reaches to the next symbol, but never past the
        // end of its own section: `_init` must not swallow the PLT that follows `.init`.
        ends = entries.indices.map { index in
            let (start, size, sectionEnd, _) = entries[index]
            if size > 0 { return Self.adding(start, size) }
            let next = index + 1 < entries.count ? entries[index + 1].0 : UInt64.max
            return max(Self.adding(start, 1), min(next, sectionEnd))
        }
        return true
    }

    /// True when section `s` has bytes in the file (not SHT_NOBITS: a debug file made by `objcopy
    /// --only-keep-debug` keeps the headers of the sections it drops) and they lie within a file of `size` bytes
    /// (no overflow on any value).
    private static func fits(_ s: Section, in size: Int) -> Bool {
        s.type != 8 && s.offset >= 0 && s.size >= 0 && s.offset <= size && s.size <= size - s.offset
    }

    /// `a + b`, or UInt64.max when that overflows (addresses from a corrupt file).
    private static func adding(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? .max : sum
    }

    /// A section header.
    private struct Section {
        var name: Int, type: UInt32, address: UInt64, offset: Int, size: Int, link: Int, alignment: Int
        var entrySize: Int
    }

    /// PLT stubs as symbols (start, size, section end, name offset): perf names them `function@plt`; here they
    /// get the name of the function they jump to, with `@plt` appended at lookup.
    private var pltEntries: [(UInt64, UInt64, UInt64, Int)] = []
    private var pltStart: UInt64 = 0, pltEnd: UInt64 = 0
    /// Virtual addresses of the PLT stubs (empty when the file has none).
    var pltRange: Range<UInt64> { pltStart..<pltEnd }

    /// Reads `.rela.plt` (x86-64 JUMP_SLOT relocations) to name the 16-byte stubs of `.plt.sec`, or of `.plt`
    /// after its first, resolver entry.
    private func addPLTStubs(_ sections: [Section], names index: Int) {
        guard index < sections.count, Self.fits(sections[index], in: size) else { return }
        let names = sections[index]
        func named(_ wanted: String) -> Section? {
            sections.first { section in
                // The name and its terminator must lie inside the section-name table (strncmp reads that far).
                guard section.name < names.size, wanted.utf8.count + 1 <= names.size - section.name else { return false }
                let at = names.offset + section.name
                let cString = base!.advanced(by: at).assumingMemoryBound(to: CChar.self)
                return strncmp(cString, wanted, wanted.utf8.count + 1) == 0
            }
        }
        guard let rela = named(".rela.plt"), rela.link < sections.count, let plt = named(".plt.sec") ?? named(".plt")
        else { return }
        let dynsym = sections[rela.link]
        guard dynsym.link < sections.count else { return }
        let strings = sections[dynsym.link]
        guard Self.fits(rela, in: size), Self.fits(dynsym, in: size), Self.fits(strings, in: size),
            plt.address <= UInt64.max - UInt64(plt.size) - 16, UInt64(rela.size / 24) <= UInt64(plt.size) / 16 + 1
        else { return }
        let first = plt.address + (plt.type == 1 && named(".plt.sec") == nil ? 16 : 0)
        let count = rela.size / 24
        for slot in 0..<count {
            let info = u64(rela.offset + slot * 24 + 8)
            guard info & 0xffff_ffff == 7 else { continue }  // R_X86_64_JUMP_SLOT
            let symbol = Int(info >> 32)
            guard (symbol + 1) * 24 <= dynsym.size else { continue }
            let name = Int(u32(dynsym.offset + symbol * 24))
            guard name < strings.size else { continue }
            let start = first + UInt64(slot) * 16
            pltEntries.append((start, 16, plt.address + UInt64(plt.size), strings.offset + name))
        }
        pltStart = plt.address
        pltEnd = plt.address + UInt64(plt.size)
    }

    /// Calls `body` with the name and value (the address, for functions and variables) of every symbol the file
    /// defines, of any type, in the table's order; the name's bytes are valid during the call only.
    func forEachDefinedSymbol(_ body: (_ name: UnsafeRawBufferPointer, _ value: UInt64) -> Void) {
        guard let base, let table else { return }
        for at in stride(from: table.offset, to: table.offset + table.size - 23, by: table.entrySize) {
            let name = Int(u32(at))
            guard u16(at + 6) != 0, name < table.stringsSize else { continue }  // SHN_UNDEF: defined elsewhere
            let cString = base.advanced(by: table.strings + name).assumingMemoryBound(to: CChar.self)
            body(UnsafeRawBufferPointer(start: cString, count: strnlen(cString, table.stringsSize - name)), u64(at + 8))
        }
    }

    /// The symbol containing virtual address `address`, with the offset into it and whether the address is a PLT
    /// stub that jumps to that symbol; nil when none does.
    func symbol(containing address: UInt64) -> (name: String, offset: UInt64, isPLT: Bool)? {
        var low = 0, high = starts.count
        while low < high {
            let mid = (low + high) / 2
            if starts[mid] <= address { low = mid + 1 } else { high = mid }
        }
        guard low > 0 else { return nil }
        let index = low - 1
        let offset = address - starts[index]
        guard address < ends[index] else { return nil }
        let cString = base!.advanced(by: nameOffsets[index]).assumingMemoryBound(to: CChar.self)
        let limit = size - nameOffsets[index]
        let length = strnlen(cString, limit)
        let bytes = UnsafeRawBufferPointer(start: cString, count: length)
        return (String(decoding: bytes, as: UTF8.self), offset, address >= pltStart && address < pltEnd)
    }
}
