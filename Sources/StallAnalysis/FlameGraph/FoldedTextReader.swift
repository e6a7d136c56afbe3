/// Reads folded text: `stack count` lines, and the two-count `stack before after` lines of a differential
/// profile. Blank lines and `# ` comments are skipped; other lines without a trailing count are counted and
/// reported once per input.
///
/// Single-count files could go through ``FoldedImporter``, but the flame graph needs what ``FoldedStacks`` does
/// not keep: the two counts of differential lines and the input order (for `--flamechart`). The number syntax is
/// ``FoldedImporter``'s.
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

    /// Parses one trimmed line of bytes: the last number is the count (``FoldedImporter``'s rule); a number
    /// before it makes the line a two-count `stack before after` line.
    static func parse(_ line: ArraySlice<UInt8>) -> ProfileStack? {
        line.withUnsafeBufferPointer { bytes -> ProfileStack? in
            guard let (length, count) = FoldedImporter.parse(bytes) else { return nil }
            var stackLength = length
            var before: Double? = nil
            if let (shorter, first) = FoldedImporter.parse(UnsafeBufferPointer(rebasing: bytes[0..<length])) {
                before = first
                stackLength = shorter
            }
            var start = 0
            var end = stackLength
            while start < end, isBlank(bytes[start]) { start += 1 }
            while end > start, isBlank(bytes[end - 1]) { end -= 1 }
            guard start < end else { return nil }
            return ProfileStack(stack: String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self),
                                count: count, before: before)
        }
    }

    /// Reads all of `stream`, appending its stacks in input order; when `strict`, a line that is not folded is bad
    /// data instead of a warning.
    static func read(_ stream: ByteStream, strict: Bool = false, into stacks: inout [ProfileStack],
                     diagnostics: inout Diagnostics) throws {
        var ignored = 0
        var firstIgnored = 0
        while let raw = try stream.nextLine() {
            let line = trimmed(raw)
            if line.isEmpty || isComment(line) { continue }
            try ProfileLoader.checkDepth(line, path: stream.name, position: "line \(stream.lineNumber)")
            if let entry = parse(line) {
                stacks.append(entry)
            } else {
                if strict {
                    throw AnalysisError.badData(path: stream.name, position: "line \(stream.lineNumber)",
                                                reason: "not a folded line (stack count)")
                }
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
