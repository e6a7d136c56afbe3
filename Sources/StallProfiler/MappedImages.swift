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
        guard let bytes = try? FileReader.contents(of: "/proc/self/maps") else { return [] }
        let text = String(decoding: bytes, as: UTF8.self)
        var ranges: [String: (start: UInt64, end: UInt64, base: UInt64?)] = [:]
        var order: [String] = []
        for line in text.split(separator: "\n") {
            // start-end perms offset dev inode path
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count == 6, let path = fields.last.map({ String($0.drop { $0 == " " }) }),
                path.hasPrefix("/"), !known.contains(path)
            else { continue }
            let bounds = fields[0].split(separator: "-")
            guard bounds.count == 2, let start = UInt64(bounds[0], radix: 16), let end = UInt64(bounds[1], radix: 16),
                let offset = UInt64(fields[2], radix: 16)
            else { continue }
            if ranges[path] == nil { order.append(path) }
            var range = ranges[path] ?? (start, end, nil)
            range.start = min(range.start, start)
            range.end = max(range.end, end)
            if offset == 0 && range.base == nil { range.base = start }
            ranges[path] = range
        }
        return order.compactMap { path in
            guard let range = ranges[path], let base = range.base, let elf = ELFHeaderInfo(path: path) else { return nil }
            return ImageRecord(path: path, loadBias: base &- elf.firstLoadPage, start: range.start, end: range.end,
                               buildID: elf.buildID)
        }
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
        guard let header = bytes(at: 0, count: 64), header[0] == 0x7f, header[1] == 0x45, header[2] == 0x4c,
            header[3] == 0x46, header[4] == 2, header[5] == 1
        else { return nil }
        let tableOffset = integer(header, 0x20, UInt64.self)
        let entrySize = Int(integer(header, 0x36, UInt16.self)), count = Int(integer(header, 0x38, UInt16.self))
        guard entrySize >= 56, let table = bytes(at: tableOffset, count: entrySize * count) else { return nil }
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
