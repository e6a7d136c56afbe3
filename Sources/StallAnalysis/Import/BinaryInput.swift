/// Names binary inputs stallprof does not read, from their magic bytes, so the error says what the file is.
enum BinaryInput {
    /// A known binary format's name, or nil.
    static func name(_ head: ArraySlice<UInt8>) -> String? {
        let bytes = Array(head.prefix(8))
        if bytes.starts(with: [0x1F, 0x8B]) {
            return "gzip-compressed data, perhaps a pprof profile (stallprof writes pprof but does not read it; use go tool pprof)"
        }
        if bytes.starts(with: Array("PERFILE2".utf8)) { return "a perf.data file (run perf script and fold its output)" }
        if bytes.starts(with: [0x7F, 0x45, 0x4C, 0x46]) { return "an ELF file" }
        if bytes.starts(with: [0x28, 0xB5, 0x2F, 0xFD]) { return "zstd-compressed data (decompress it first)" }
        if bytes.starts(with: Array("PK".utf8) + [3, 4]) { return "a zip archive (unpack it first)" }
        return nil
    }

    /// What a binary input is: a known format's name, or where its first NUL byte is.
    static func describe(_ head: ArraySlice<UInt8>) -> String {
        if let known = name(head) { return known }
        return head.firstIndex(of: 0).map { "a NUL byte at byte \($0 - head.startIndex)" } ?? "not text"
    }
}
