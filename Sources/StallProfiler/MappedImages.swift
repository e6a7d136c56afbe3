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
/// ends: the load bias comes from the mapping of the file's first page and the ELF program headers on disk.
enum MappedImages {
    /// Images mapped now whose paths are not in `known`.
    static func unknown(excluding known: Set<String>) -> [ImageRecord] {
        loadedImages(in: fileMappings(), excluding: known).compactMap { image in
            guard let elf = ELFHeaderInfo(path: image.path) else { return nil }
            return ImageRecord(path: image.path, loadBias: image.base &- elf.firstLoadPage, start: image.start,
                               end: image.end, buildID: elf.buildID)
        }
    }

    /// One file's image as the loader mapped it: where its first page is, and the addresses its mappings span.
    struct LoadedImage: Equatable {
        var path: String
        var base: UInt64, start: UInt64, end: UInt64
    }

    /// The images `mappings` (address order, as in `/proc/self/maps`) show loaded, one for each file path (the
    /// first such) not in `known`, in the order their first pages appear. A file may be mapped more than once: by the
    /// loader, segment after segment from its first page (offset 0), and, apart, by code that reads it (a symbolizer
    /// maps a library whole, read-only, at offset 0 too). Each mapping of the first page starts an instance, the
    /// later ones of the file join the last instance; only an instance with code (an executable mapping) is the
    /// loaded image: an image whose first page comes from a reading mapping would get a wrong load bias.
    static func loadedImages(in mappings: [MemoryMapping], excluding known: Set<String>) -> [LoadedImage] {
        var instances: [String: [(image: LoadedImage, code: Bool)]] = [:]
        var order: [String] = []
        for mapping in mappings where mapping.path.hasPrefix("/") && !known.contains(mapping.path) {
            let (path, start, end) = (mapping.path, mapping.addresses.lowerBound, mapping.addresses.upperBound)
            if mapping.fileOffset == 0 {
                if instances[path] == nil { order.append(path) }
                instances[path, default: []].append((LoadedImage(path: path, base: start, start: start, end: end),
                                                     mapping.executable))
            } else if let last = instances[path]?.indices.last {  // a later segment (one before any first page: none)
                instances[path]![last].image.end = max(instances[path]![last].image.end, end)
                instances[path]![last].code = instances[path]![last].code || mapping.executable
            }
        }
        return order.compactMap { path in instances[path]?.first { $0.code }?.image }
    }

    /// The mappings of files with code, filtered in C (`stallcap_file_mappings`) before Swift parses them: a
    /// process may have thousands of mappings that no image needs, each thread's stack and guard, and files mapped
    /// only to be read. The test process maps ~1,900 clang module files (.pcm) read-only: parsing all 2,061 file
    /// lines in Swift cost the watchdog 50 ms of CPU per look (debug build), 400-550 ms of wall time at load 11,
    /// just as a stall began and before its first sample; only files that have code: 144 lines, 7-8 ms (measured
    /// with the same filter).
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

/// What the watchdog needs from an ELF file's headers: the page of its first loadable segment and its build-id.
struct ELFHeaderInfo {
    /// Virtual address of the first `PT_LOAD` segment, rounded down to its page (the address the file's first
    /// page is mapped for).
    var firstLoadPage: UInt64 = 0
    /// GNU build-id, empty when absent.
    var buildID: [UInt8] = []

    /// Reads the headers of the 64-bit little-endian ELF file at `path`; nil when it is not one.
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
        var foundLoad = false
        for index in 0..<count {
            let at = index * entrySize
            let type = integer(table, at, UInt32.self)
            let offset = integer(table, at + 8, UInt64.self), vaddr = integer(table, at + 16, UInt64.self)
            let fileSize = integer(table, at + 32, UInt64.self), align = integer(table, at + 48, UInt64.self)
            if type == 1 && !foundLoad {  // PT_LOAD
                foundLoad = true
                firstLoadPage = (vaddr &- offset) & ~UInt64(4095)
            } else if type == 4, buildID.isEmpty, let notes = bytes(at: offset, count: Int(min(fileSize, 1 << 16))) {
                buildID = notes.withUnsafeBytes { BuildID.find(inNotes: $0, alignment: Int(align)) }
            }
        }
        guard foundLoad else { return nil }
    }
}
