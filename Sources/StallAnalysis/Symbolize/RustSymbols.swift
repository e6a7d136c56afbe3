/// Repairs Rust symbols that a profiler demangled only partly (legacy mangling): `_$LT$a..b$GT$::f::h0123456789abcdef`
/// becomes `<a::b>::f`. The repair inferno applies to perf and `sample` frames.
public enum RustSymbols {
    /// Length of the `::h` + 16 hex digits suffix, without the `::`.
    static let hashLength = 17

    /// Escapes of legacy Rust mangling and what they stand for.
    static let escapes: [(code: [UInt8], text: [UInt8])] = [
        ("$SP$", "@"), ("$BP$", "*"), ("$RF$", "&"), ("$LT$", "<"), ("$GT$", ">"), ("$LP$", "("), ("$RP$", ")"),
        ("$C$", ","), ("$u7e$", "~"), ("$u20$", " "), ("$u27$", "'"), ("$u3d$", "="), ("$u5b$", "["),
        ("$u5d$", "]"), ("$u7b$", "{"), ("$u7d$", "}"), ("$u3b$", ";"), ("$u2b$", "+"), ("$u21$", "!"),
        ("$u22$", "\""),
    ].map { (Array($0.0.utf8), Array($0.1.utf8)) }

    /// True when `symbol` ends in a Rust hash (`h` and 16 hex digits).
    public static func hasHash<C: BidirectionalCollection>(_ symbol: C) -> Bool where C.Element == UInt8, C.Index == Int {
        guard symbol.count >= hashLength else { return false }
        let start = symbol.endIndex - hashLength
        guard symbol[start] == UInt8(ascii: "h") else { return false }
        return symbol[(start + 1)...].allSatisfy { PerfLineSyntax.isDigit($0) || ($0 | 0x20) &- 97 < 6 }
    }

    /// The repaired symbol, or nil when `symbol` has no trailing Rust hash (and is returned unchanged by callers).
    public static func repair(_ symbol: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard hasHash(symbol) else { return nil }
        var end = symbol.count - hashLength
        if end >= 2 && symbol[end - 1] == UInt8(ascii: ":") && symbol[end - 2] == UInt8(ascii: ":") { end -= 2 }
        var index = 0
        if end >= 2 && symbol[0] == UInt8(ascii: "_") && symbol[1] == UInt8(ascii: "$") { index = 1 }
        var out: [UInt8] = []
        out.reserveCapacity(end)
        scan: while index < end {
            let byte = symbol[index]
            if byte == UInt8(ascii: ".") {
                if index + 1 < end && symbol[index + 1] == UInt8(ascii: ".") {
                    out.append(contentsOf: "::".utf8)
                    index += 2
                } else {
                    out.append(byte)
                    index += 1
                }
            } else if byte == UInt8(ascii: "$") {
                for escape in escapes where index + escape.code.count <= end
                    && symbol[index..<(index + escape.code.count)].elementsEqual(escape.code)
                {
                    out.append(contentsOf: escape.text)
                    index += escape.code.count
                    continue scan
                }
                out.append(contentsOf: symbol[index..<end])  // unknown escape: keep the rest as it is
                break
            } else {
                out.append(byte)
                index += 1
            }
        }
        return out
    }

    /// `repair` for strings: the repaired symbol, or `symbol` itself.
    public static func repaired(_ symbol: String) -> String {
        var text = symbol
        return text.withUTF8 { repair($0).map { String(decoding: $0, as: UTF8.self) } } ?? symbol
    }
}
