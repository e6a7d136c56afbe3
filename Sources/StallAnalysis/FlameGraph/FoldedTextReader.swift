/// Reads folded text: `stack count` lines, and the two-count `stack before after` lines of a differential
/// profile. Blank lines and `# ` comments are skipped; other lines without a trailing count are counted and
/// reported once per input.
///
/// PRIVATE STOPGAP for the flame graph: the `fold` branch adds a folded-text importer to ``Folder``; this reader
/// stays only for the two-count lines that ``FoldedStacks`` cannot hold, and can be unified with it then.
struct FoldedTextReader {
    /// True when the first line with content in `head` reads as a folded line, or when there is no such line (an
    /// empty input is an empty profile).
    static func recognizes(_ head: ArraySlice<UInt8>) -> Bool {
        for line in head.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            let text = trimmed(line)
            if text.isEmpty || isComment(text) { continue }
            return parse(text) != nil
        }
        return true
    }

    /// Parses one line: the stack and its counts; nil when the line has no trailing count or no stack.
    static func parse<S: StringProtocol>(_ line: S) -> ProfileStack? {
        var copy = String(line)
        return copy.withUTF8 { parse(trimmed(ArraySlice($0))) }
    }

    /// Parses one trimmed line of bytes.
    static func parse(_ line: ArraySlice<UInt8>) -> ProfileStack? {
        guard let (count, rest) = trailingNumber(line) else { return nil }
        var stack = rest
        var before: Double? = nil
        if let (first, head) = trailingNumber(rest) {
            before = first
            stack = head
        }
        guard !stack.isEmpty else { return nil }
        return ProfileStack(stack: String(decoding: stack, as: UTF8.self), count: count, before: before)
    }

    /// The number after the last blank of `line` and what comes before it (trimmed), if the last word is a
    /// non-negative decimal number.
    private static func trailingNumber(_ line: ArraySlice<UInt8>) -> (Double, ArraySlice<UInt8>)? {
        guard let blank = line.lastIndex(where: isBlank) else { return nil }
        let word = line[(blank + 1)...]
        var integer: UInt64 = 0
        var dots = 0
        for byte in word {
            if byte == UInt8(ascii: ".") {
                dots += 1
                guard dots == 1 else { return nil }
            } else if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                if dots == 0 { integer = integer &* 10 &+ UInt64(byte - UInt8(ascii: "0")) }
            } else {
                return nil
            }
        }
        guard !word.isEmpty, word.count > dots else { return nil }
        let value: Double
        if dots == 0 && word.count < 16 {
            value = Double(integer)
        } else {
            guard let parsed = Double(String(decoding: word, as: UTF8.self)) else { return nil }
            value = parsed
        }
        return (value, trimmed(line[..<blank]))
    }

    /// Reads all of `stream`, appending its stacks in input order.
    static func read(_ stream: ByteStream, into stacks: inout [ProfileStack], diagnostics: inout Diagnostics) throws {
        var ignored = 0
        var firstIgnored = 0
        while let raw = try stream.nextLine() {
            let line = trimmed(raw)
            if line.isEmpty || isComment(line) { continue }
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

    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r")
    }

    /// `# ` starts a comment line.
    private static func isComment(_ line: ArraySlice<UInt8>) -> Bool {
        line.count >= 2 && line[line.startIndex] == UInt8(ascii: "#") && line[line.startIndex + 1] == UInt8(ascii: " ")
    }

    /// Without leading and trailing blanks.
    private static func trimmed(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        guard let first = line.firstIndex(where: { !isBlank($0) }), let last = line.lastIndex(where: { !isBlank($0) })
        else { return [] }
        return line[first...last]
    }
}
