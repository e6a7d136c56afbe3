/// Reads folded text: `stack count` lines, and the two-count `stack before after` lines of a differential
/// profile. Blank lines and `# ` comments are skipped; other lines without a trailing count are counted and
/// reported once per input.
///
/// PRIVATE STOPGAP for the flame graph: the `fold` branch adds a folded-text importer to ``Folder``; this reader
/// stays only for the two-count lines that ``FoldedStacks`` cannot hold, and can be unified with it then.
struct FoldedTextReader {
    /// True when the first line with content in `head` reads as a folded line.
    static func recognizes(_ head: ArraySlice<UInt8>) -> Bool {
        var lines = head.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)[...]
        // The last line of a partial head may be cut; it still decides if it is the only one.
        while let line = lines.first {
            let text = String(decoding: line, as: UTF8.self).trimmed
            if text.isEmpty || text.hasPrefix("# ") {
                lines = lines.dropFirst()
                continue
            }
            return parse(text) != nil
        }
        return false
    }

    /// Parses one line: the stack and its counts; nil when the line has no trailing count or no stack.
    static func parse(_ line: Substring) -> ProfileStack? {
        guard let (count, rest) = trailingNumber(line) else { return nil }
        var stack = rest
        var before: Double? = nil
        if let (first, head) = trailingNumber(rest) {
            before = first
            stack = head
        }
        guard !stack.isEmpty else { return nil }
        return ProfileStack(stack: String(stack), count: count, before: before)
    }

    /// The number after the last space of `text` and what comes before it (trimmed), if the last word is a
    /// non-negative decimal number.
    private static func trailingNumber(_ text: Substring) -> (Double, Substring)? {
        guard let space = text.lastIndex(where: { $0 == " " || $0 == "\t" }) else { return nil }
        let word = text[text.index(after: space)...]
        var dots = 0
        guard !word.isEmpty, word.utf8.allSatisfy({ byte in
            if byte == UInt8(ascii: ".") { dots += 1; return dots == 1 }
            return byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
        }), word != ".", let value = Double(word) else { return nil }
        return (value, text[..<space].trimmed)
    }

    /// Reads all of `stream`, appending its stacks in input order.
    static func read(_ stream: ByteStream, into stacks: inout [ProfileStack], diagnostics: inout Diagnostics) throws {
        var ignored = 0
        var firstIgnored = 0
        while let raw = try stream.nextLine() {
            let line = String(decoding: raw, as: UTF8.self).trimmed
            if line.isEmpty || line.hasPrefix("# ") { continue }
            if let entry = parse(line) {
                stacks.append(entry)
            } else {
                if ignored == 0 { firstIgnored = stream.lineNumber }
                ignored += 1
            }
        }
        if ignored > 0 {
            diagnostics.warn("\(stream.name): ignored \(ignored) lines with invalid format (first: line \(firstIgnored))")
        }
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces, tabs and carriage returns.
    var trimmed: Substring {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard let first = firstIndex(where: { !isBlank($0) }), let last = lastIndex(where: { !isBlank($0) }) else {
            return Substring()
        }
        return Substring(self[first...last])
    }
}
