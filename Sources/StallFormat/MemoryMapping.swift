/// One line of a process's `/proc/<pid>/maps`: an address range and what is mapped there. The one reader of that
/// file in Swift, for the watchdog (images loaded without the loader's lock) and the analyzer (the Swift
/// runtime's directory).
public struct MemoryMapping: Sendable, Equatable {
    /// The addresses mapped.
    public var addresses: Range<UInt64>
    /// Offset in the file of the range's first byte.
    public var fileOffset: UInt64
    /// The name field: a file's absolute path (the kernel's, e.g. `/usr/lib/...`), or a name such as `[vdso]` or
    /// `[stack]`.
    public var path: String
    /// True when the pages may be executed (`x` in the permissions): code. The loader maps an image's code so; a
    /// file the process only maps to read it (a symbolizer reading a library) has none.
    public var executable: Bool

    /// Creates a mapping; `executable` defaults to false.
    public init(addresses: Range<UInt64>, fileOffset: UInt64, path: String, executable: Bool = false) {
        (self.addresses, self.fileOffset, self.path, self.executable) = (addresses, fileOffset, path, executable)
    }

    /// This process's mappings, from `/proc/self/maps`; empty when it cannot be read.
    public static func current() -> [MemoryMapping] {
        guard let bytes = try? FileReader.contents(of: "/proc/self/maps") else { return [] }
        return parse(String(decoding: bytes, as: UTF8.self))
    }

    /// The named mappings of maps text, in its order: each line `start-end perms offset dev inode name`, fields
    /// apart by spaces, the name being the rest of the line (a path may hold spaces). Anonymous mappings (no name)
    /// and malformed lines are left out.
    public static func parse(_ text: String) -> [MemoryMapping] {
        text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count == 6, let name = fields.last?.drop(while: { $0 == " " }), !name.isEmpty else { return nil }
            let bounds = fields[0].split(separator: "-")
            guard bounds.count == 2, let start = UInt64(bounds[0], radix: 16), let end = UInt64(bounds[1], radix: 16),
                start <= end, let offset = UInt64(fields[2], radix: 16)
            else { return nil }
            return MemoryMapping(addresses: start..<end, fileOffset: offset, path: String(name),
                                 executable: fields[1].contains("x"))
        }
    }
}
