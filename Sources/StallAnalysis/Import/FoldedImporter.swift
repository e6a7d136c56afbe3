/// The one reader of folded text (`root;...;leaf COUNT` lines, as written by stackcollapse-*, inferno, speedscope
/// and this tool), for every command: `fold` sums the stacks into ``FoldedStacks`` (``importStacks(from:into:diagnostics:)``);
/// `flamegraph` and `diff` keep the input order and the two counts of differential `stack before after` lines
/// (``read(_:into:diagnostics:)``).
///
/// Line rules, the same for both: the count is the trailing number (`\d+(\.\d*)?`, like flamegraph.pl's
/// `^(.*)\s+?(\d+(?:\.\d*)?)$`) after a blank; the stack is everything before that blank, as flamegraph.pl reads
/// it (`a;  5` is the stack `a; `, so `fold | fold` gives back every stack `fold` prints); the flame graph draws it
/// without the blanks around it, as inferno does (leaf ``). The stack may be empty: py-spy's raw output starts with ` 2`, samples without a stack, which
/// count in the total like flamegraph.pl counts them (the root grows, no frame is drawn). Blank lines and `# `
/// comment lines are skipped; CRLF line ends and blanks after the count are accepted; any other line without a count is
/// counted and reported (``UnrecognizedLines``; an error with `--strict`).
public struct FoldedImporter: StackImporter {
    /// Options for folded input. Every field documents its default.
    public struct Options: Sendable {
        /// `--strict`: a line without a count is an error. Default: false, such lines are counted and reported.
        public var strict = false

        /// Creates the default options.
        public init() {}
    }

    /// `folded`.
    public static let formatName = "folded"

    /// The first line that is not blank or a `#` comment is `stack COUNT` (the stack may be empty).
    public static func recognizes(_ head: ArraySlice<UInt8>) -> Bool {
        guard let line = head.split(separator: 10).first(where: {
            !$0.allSatisfy(PerfLineSyntax.isSpace) && $0.first != UInt8(ascii: "#")
        }) else {
            return false
        }
        return Array(line).withUnsafeBufferPointer { split($0) != nil }
    }

    /// The options in use.
    public let options: Options

    /// Creates an importer.
    public init(options: Options = Options()) { self.options = options }

    /// One folded line taken apart: where its stack and its (last) count lie, and the count's value.
    struct Line {
        /// The stack: everything before the blank in front of the count (may be empty).
        var stack: Range<Int>
        /// The digits of the count.
        var digits: Range<Int>
        /// The count.
        var count: Double
    }

    /// Splits `line` (without its newline) into stack and count; nil when it does not end in a count after a blank.
    @inline(__always)
    static func split(_ line: UnsafeBufferPointer<UInt8>) -> Line? {
        var end = line.count
        while end > 0, isBlank(line[end - 1]) { end -= 1 }
        guard let (stackEnd, count) = parse(UnsafeBufferPointer(rebasing: line[0..<end])) else { return nil }
        return Line(stack: 0..<stackEnd, digits: (stackEnd + 1)..<end, count: count)
    }

    /// Splits a line that ends in its count into the length of what comes before the one blank in front of the
    /// count, and the count, like flamegraph.pl's `^(.*)\s+?(\d+(?:\.\d*)?)$`; nil when there is no such count.
    static func parse(_ line: UnsafeBufferPointer<UInt8>) -> (stackLength: Int, count: Double)? {
        let end = line.count
        var start = end
        var dot = -1
        while start > 0 {
            let byte = line[start - 1]
            if PerfLineSyntax.isDigit(byte) {
                start -= 1
            } else if byte == UInt8(ascii: "."), dot < 0 {
                dot = start - 1
                start -= 1
            } else {
                break
            }
        }
        // The number must start with a digit: `\d+(?:\.\d*)?`.
        while start < end && !PerfLineSyntax.isDigit(line[start]) { start += 1 }
        guard start < end, start >= 1, PerfLineSyntax.isSpace(line[start - 1]) else { return nil }
        if dot >= 0 && dot < start { return nil }
        guard let count = decimal(UnsafeBufferPointer(rebasing: line[start..<end])) else { return nil }
        return (start - 1, count)
    }

    /// The value of `digits` (`\d+(\.\d*)?`, already checked), or nil when it is too large for a finite Double.
    /// Short integers are summed exactly; anything else goes through the standard library's correctly rounded
    /// parser.
    static func decimal(_ digits: UnsafeBufferPointer<UInt8>) -> Double? {
        if digits.count <= 15, !digits.contains(UInt8(ascii: ".")) {
            return Double(digits.reduce(0) { $0 * 10 + Int64($1 - 48) })
        }
        guard let value = Double(String(decoding: digits, as: UTF8.self)), value.isFinite else { return nil }
        return value
    }

    /// Calls `body` with every line of `stream` that holds a stack, taken apart, and its number; skips blank and
    /// comment lines and reports the others.
    private func forEachStack(
        _ stream: ByteStream, diagnostics: inout Diagnostics,
        _ body: (UnsafeBufferPointer<UInt8>, Line, Int, inout UnrecognizedLines) throws -> Void
    ) throws {
        var unrecognized = UnrecognizedLines(path: stream.name, strict: options.strict)
        try stream.forEachLine { line, number in
            guard let first = line.firstIndex(where: { !Self.isBlank($0) }) else { return }
            if line[first] == UInt8(ascii: "#"), first + 1 < line.count, line[first + 1] == UInt8(ascii: " ") {
                return
            }
            guard let parts = Self.split(line) else {
                try unrecognized.record(line, number: number, why: "not a folded stack (\"frames COUNT\")")
                return
            }
            try body(line, parts, number, &unrecognized)
        }
        unrecognized.report(to: &diagnostics)
    }

    /// Streams the lines and adds each stack with its count (a two-count line's first count is part of its stack).
    public func importStacks(from stream: ByteStream, into stacks: inout FoldedStacks, diagnostics: inout Diagnostics)
        throws
    {
        // A file's size bounds its stacks' bytes (at most 256 MB reserved: untouched room costs nothing).
        if let size = stream.remainingFileBytes { stacks.reserveStackBytes(min(size, 256 << 20)) }
        // Counts too large for the counting type are named as such, not as unrecognized lines.
        var overflowed = UnrecognizedLines(path: stream.name, strict: options.strict)
        overflowed.label = ("line whose count exceeds 2^64-1", "lines whose count exceeds 2^64-1")
        defer { overflowed.report(to: &diagnostics) }
        try forEachStack(stream, diagnostics: &diagnostics) { line, parts, number, _ in
            let stack = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(line)[parts.stack])
            // Integral counts are added exactly (up to 2^64-1 per stack); a larger one, or a sum that would
            // overflow, drops the line with a warning (an error with --strict), never a wrong number.
            let digits = UnsafeBufferPointer(rebasing: line[parts.digits])
            guard !digits.contains(UInt8(ascii: ".")) else {
                stacks.add(bytes: stack, count: parts.count)
                return
            }
            guard let whole = Self.integer(digits) else {
                try overflowed.record(line, number: number, why: "count larger than 2^64-1")
                return
            }
            if !stacks.add(bytes: stack, whole: whole) {
                try overflowed.record(line, number: number, why: "the stack's count would exceed 2^64-1")
            }
        }
    }

    /// Streams the lines and appends each stack in input order; `stack before after` lines keep both counts.
    /// Stacks deeper than ``ProfileLoader/maxDepth`` are bad data (a flame graph could not draw them).
    public func read(_ stream: ByteStream, into stacks: inout [ProfileStack], diagnostics: inout Diagnostics) throws {
        try forEachStack(stream, diagnostics: &diagnostics) { line, parts, number, _ in
            stacks.append(try Self.profileStack(line, parts, path: stream.name, number: number))
        }
    }

    /// One line read as the flame graph reads it: the stack and its counts; nil when it holds no count.
    static func profileStack<S: StringProtocol>(_ text: S) -> ProfileStack? {
        var copy = String(text)
        return copy.withUTF8 { line in split(line).flatMap { try? profileStack(line, $0, path: "", number: 0) } }
    }

    /// The stack of a split line, with the count before when the stack itself ends in `blank NUMBER`.
    private static func profileStack(_ line: UnsafeBufferPointer<UInt8>, _ parts: Line, path: String, number: Int)
        throws -> ProfileStack
    {
        var stack = parts.stack
        var before: Double? = nil
        if let (shorter, first) = parse(UnsafeBufferPointer(rebasing: line[stack])) {
            before = first
            stack = 0..<shorter
        }
        // Drawn without the blanks around it, as inferno draws it (`a;  5` has the leaf ``, not ` `).
        var (lower, upper) = (stack.lowerBound, stack.upperBound)
        while lower < upper, isBlank(line[lower]) { lower += 1 }
        while upper > lower, isBlank(line[upper - 1]) { upper -= 1 }
        stack = lower..<upper
        let bytes = UnsafeBufferPointer(rebasing: line[stack])
        try ProfileLoader.checkDepth(bytes, path: path, position: "line \(number)")
        let digits = UnsafeBufferPointer(rebasing: line[parts.digits])
        let exact = digits.contains(UInt8(ascii: ".")) ? nil : integer(digits)
        return ProfileStack(stack: String(decoding: bytes, as: UTF8.self), count: parts.count, before: before,
                            exact: exact)
    }

    /// The exact value of decimal `digits`, or nil when larger than 2^64-1.
    @inline(__always)
    static func integer(_ digits: UnsafeBufferPointer<UInt8>) -> UInt64? {
        if digits.count <= 19 { return digits.reduce(0) { $0 * 10 + UInt64($1 - 48) } }
        return UInt64(String(decoding: digits, as: UTF8.self))
    }

    @inline(__always)
    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r")
    }
}
