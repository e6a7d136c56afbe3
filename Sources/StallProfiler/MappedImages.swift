import CStallCapture
#if canImport(Glibc)
import Glibc
#endif
import StallFormat

/// Finds loaded ELF images from `/proc/self/maps` and the files themselves, without the dynamic loader's lock.
///
/// The loader's own list (`dl_iterate_phdr`) is exact but takes a lock the main thread may hold, so the watchdog
/// reads it only while the main queue answers. At a stall's start it reads the kernel's view instead, so that a
/// library loaded just before (or by) the stall is in the file even if the process is killed before the stall
/// ends: the load bias comes from the file's first executable mapping and the ELF program headers on disk.
enum MappedImages {
    /// Images mapped now whose paths are not in `known`.
    static func unknown(excluding known: Set<String>) -> [ImageRecord] {
        firstCodeMappings(in: fileMappings(), excluding: known).compactMap { code in
            guard let elf = ELFHeaderInfo(path: code.path) else { return nil }
            return image(path: code.path, code: code, elf: elf)
        }
    }

    /// The first executable mapping of each file not in `known`, in the order of those mappings. The loader maps an
    /// image's code executable; code that maps a file to read it (a symbolizer maps a library whole, read-only,
    /// at offset 0) never does, so the executable mapping, not the first page, tells the loaded image from other
    /// mappings of its file. (A library linked by lld may map its first page several times, each segment from
    /// file page 0; a reading mapping may lie right beside the loader's: neither is told apart by addresses.)
    static func firstCodeMappings(in mappings: [MemoryMapping], excluding known: Set<String>) -> [MemoryMapping] {
        var seen = Set<String>()
        return mappings.filter { mapping in
            mapping.executable && mapping.path.hasPrefix("/") && !known.contains(mapping.path)
                && seen.insert(mapping.path).inserted
        }
    }

    /// The image whose executable mapping is `code`: its load bias from the loadable segment that mapping maps
    /// (the executable `PT_LOAD` whose file page is the mapping's offset: the loader maps it at its virtual address
    /// plus the bias), its range from all loadable segments; nil when no executable segment matches.
    static func image(path: String, code: MemoryMapping, elf: ELFHeaderInfo) -> ImageRecord? {
        guard let segment = elf.loads.first(where: { $0.executable && $0.offsetPage == code.fileOffset }) else { return nil }
        let bias = code.addresses.lowerBound &- segment.addressPage
        return ImageRecord(path: path, loadBias: bias, start: bias &+ elf.lowestPage, end: bias &+ elf.highestEnd,
                           buildID: elf.buildID)
    }

    /// The executable mappings of files, filtered in C (`stallcap_file_mappings`) before Swift parses them: a
    /// process may have thousands of mappings that no image needs, each thread's stack and guard, and files mapped
    /// only to be read. The test process maps ~1,900 clang module files (.pcm) read-only: parsing all 2,061 file
    /// lines in Swift cost the watchdog 50 ms of CPU per look (debug build), 400-550 ms of wall time at load 11,
    /// just as a stall began and before its first sample; all lines of the files that have code were 144, 7-8 ms
    /// (measured with that filter); `unknown` needs only their executable lines.
    /// `initialCapacity` is the buffer's first size in bytes (it grows when the lines need more).
    static func fileMappings(initialCapacity: Int = 64 * 1024) -> [MemoryMapping] {
        var capacity = max(1, initialCapacity)
        for _ in 0..<4 {
            var buffer = [UInt8](repeating: 0, count: capacity)
            let needed = buffer.withUnsafeMutableBytes {
                stallcap_file_mappings($0.baseAddress!.assumingMemoryBound(to: CChar.self), capacity)
            }
            if needed <= capacity { return MemoryMapping.parse(String(decoding: buffer[0..<needed], as: UTF8.self)) }
            capacity = needed + needed / 4  // mappings were added meanwhile: room for more
        }
        return MemoryMapping.current()
    }
}

/// What the watchdog needs from an ELF file's headers: its loadable segments and its build-id.
struct ELFHeaderInfo {
    /// One loadable segment (`PT_LOAD`), page-rounded as the loader maps it.
    struct Load: Equatable {
        /// The file offset of its first page.
        var offsetPage: UInt64
        /// Its virtual address, rounded down to its page (mapped at this plus the load bias).
        var addressPage: UInt64
        /// Its virtual address plus its size in memory, rounded up to a page.
        var endPage: UInt64
        /// True when executable (`PF_X`).
        var executable: Bool
    }

    /// The loadable segments, in the file's order.
    var loads: [Load] = []
    /// GNU build-id, empty when absent.
    var buildID: [UInt8] = []

    /// The lowest page any loadable segment maps (0 for most libraries).
    var lowestPage: UInt64 { loads.map(\.addressPage).min() ?? 0 }
    /// The end of the highest loadable segment, page-rounded.
    var highestEnd: UInt64 { loads.map(\.endPage).max() ?? 0 }

    /// The page size segments are rounded to: the system's.
    static let pageSize = UInt64(max(4096, sysconf(Int32(_SC_PAGESIZE))))

    /// Headers with these segments (for tests).
    init(loads: [Load], buildID: [UInt8] = []) { (self.loads, self.buildID) = (loads, buildID) }

    /// Reads the headers of the 64-bit little-endian ELF file at `path`; nil when it is not one, or has no
    /// loadable segment.
    init?(path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        func bytes(at offset: UInt64, count: Int) -> [UInt8]? {
            guard count > 0, count <= 1 << 20 else { return nil }
            var buffer = [UInt8](repeating: 0, count: count)
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(offset)) }
            return n == count ? buffer : nil
        }
        func integer<T: FixedWidthInteger>(_ b: [UInt8], _ at: Int, _: T.Type) -> T {
            var value: T = 0
            for k in 0..<MemoryLayout<T>.size { value |= T(b[at + k]) << (8 * k) }
            return value
        }
        guard let header = bytes(at: 0, count: ELFHeader.size).flatMap(ELFHeader.init) else { return nil }
        let entrySize = Int(header.programHeaderSize), count = Int(header.programHeaderCount)
        guard entrySize >= 56, let table = bytes(at: header.programHeaderOffset, count: entrySize * count) else {
            return nil
        }
        let mask = ~(Self.pageSize - 1)
        for index in 0..<count {
            let at = index * entrySize
            let type = integer(table, at, UInt32.self), flags = integer(table, at + 4, UInt32.self)
            let offset = integer(table, at + 8, UInt64.self), vaddr = integer(table, at + 16, UInt64.self)
            let fileSize = integer(table, at + 32, UInt64.self), memorySize = integer(table, at + 40, UInt64.self)
            let align = integer(table, at + 48, UInt64.self)
            if type == 1 {  // PT_LOAD
                let (end, overflow) = vaddr.addingReportingOverflow(memorySize &+ Self.pageSize &- 1)
                guard !overflow else { return nil }
                loads.append(Load(offsetPage: offset & mask, addressPage: vaddr & mask, endPage: end & mask,
                                  executable: flags & 1 != 0))
            } else if type == 4, buildID.isEmpty, let notes = bytes(at: offset, count: Int(min(fileSize, 1 << 16))) {
                buildID = notes.withUnsafeBytes { BuildID.find(inNotes: $0, alignment: Int(align)) }
            }
        }
        guard !loads.isEmpty else { return nil }
    }
}
