/// Names binary inputs stallprof does not read, from their first bytes, so the error says what the file is and
/// what to do with it.
enum BinaryInput {
    /// What to tell the user about a known binary format (a sentence starting with "this is"; commands that help
    /// name the file as `path`), or nil.
    static func name(_ head: ArraySlice<UInt8>, path: String = "FILE") -> String? {
        let file = path == "<stdin>" ? "FILE" : path
        let bytes = Array(head.prefix(8))
        if bytes.starts(with: Array("PERFILE2".utf8)) || bytes.starts(with: Array("PERFFILE".utf8)) {
            return "this is perf.data: run `perf script` first (perf script -i \(file) | stallprof fold)"
        }
        if bytes.starts(with: [0x1F, 0x8B]) {  // deflate gzip is read decompressed; this is another method
            return "this is gzip-compressed with a method other than deflate: decompress it first (gunzip \(file))"
        }
        if bytes.starts(with: [0x7F, 0x45, 0x4C, 0x46]) { return "this is an ELF file, not a profile" }
        if bytes.starts(with: [0x28, 0xB5, 0x2F, 0xFD]) {
            return "this is zstd-compressed: decompress it first (zstd -d \(file), or zstdcat \(file) | stallprof fold)"
        }
        if bytes.starts(with: Array("PK".utf8) + [3, 4]) { return "this is a zip archive: unpack it first" }
        if head.first == 0x0A, looksLikePprof(Array(head)) {
            return "this is a pprof profile (protobuf; gzip-compressed ones are read decompressed), which stallprof "
                + "writes but does not read; "
                + "`go tool pprof -traces \(file)` prints its stacks, or open it in speedscope"
        }
        return nil
    }

    /// What a binary input is: a known format's description, or where its first NUL byte is.
    static func describe(_ head: ArraySlice<UInt8>) -> String {
        if let known = name(head) { return known }
        return head.firstIndex(of: 0).map { "a NUL byte at byte \($0 - head.startIndex)" } ?? "not text"
    }

    /// True when `bytes`, the start of a decompressed file, reads as a pprof `Profile` message (profile.proto):
    /// every field up to where the prefix ends has a number and a wire type that message declares, and there are
    /// at least two of them. Fields 1-6 and 11 are messages or strings (wire type 2); 7-10, 12 and 14 are
    /// integers (wire type 0); 13 (comment) is either.
    static func looksLikePprof(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        var fields = 0
        func varint() -> UInt64? {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while offset < bytes.count, shift < 64 {
                let byte = bytes[offset]
                offset += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
            return nil
        }
        while offset < bytes.count {
            guard let tag = varint() else { break }  // cut by the prefix
            let (field, wire) = (tag >> 3, tag & 7)
            switch (field, wire) {
            case (1...6, 2), (11, 2), (13, 2):
                guard let length = varint() else { return fields >= 2 }
                offset = length > UInt64(bytes.count - offset) ? bytes.count : offset + Int(length)
            case (7...10, 0), (12, 0), (13, 0), (14, 0):
                guard varint() != nil, offset <= bytes.count else { return fields >= 2 }
            default:
                return false
            }
            fields += 1
        }
        return fields >= 2
    }
}
