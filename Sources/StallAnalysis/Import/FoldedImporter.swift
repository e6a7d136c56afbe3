/// Reads folded stacks (`root;...;leaf COUNT` lines, as written by stackcollapse-*, inferno, speedscope and this
/// tool): duplicate stacks are merged, counts may be fractional, CRLF line ends are accepted.
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

    /// The first line that is not blank or a `#` comment is `stack COUNT`.
    public static func recognizes(_ head: ArraySlice<UInt8>) -> Bool {
        guard let line = head.split(separator: 10).first(where: {
            !$0.allSatisfy(PerfLineSyntax.isSpace) && $0.first != UInt8(ascii: "#")
        }) else {
            return false
        }
        let trimmed = Array(line.last == 13 ? line.dropLast() : line)
        return trimmed.withUnsafeBufferPointer { parse($0) != nil }
    }

    /// The options in use.
    public let options: Options

    /// Creates an importer.
    public init(options: Options = Options()) { self.options = options }

    /// Splits a line into the stack's length and the count, like flamegraph.pl's `^(.*)\s+?(\d+(?:\.\d*)?)$`: the
    /// count is the trailing number, the stack everything before the one blank in front of it.
    static func parse(_ line: UnsafeBufferPointer<UInt8>) -> (stackLength: Int, count: Double)? {
        var end = line.count
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
        guard start < end, start >= 2, PerfLineSyntax.isSpace(line[start - 1]) else { return nil }
        if dot >= 0 && dot < start { return nil }
        guard let count = decimal(UnsafeBufferPointer(rebasing: line[start..<end])) else { return nil }
        end = start - 1
        return (end, count)
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

    /// Streams the lines and adds each stack with its count.
    public func importStacks(from stream: ByteStream, into stacks: inout FoldedStacks, diagnostics: inout Diagnostics)
        throws
    {
        var unrecognized = UnrecognizedLines(path: stream.name, strict: options.strict)
        try stream.forEachLine { line, number in
            if line.isEmpty || line.allSatisfy(PerfLineSyntax.isSpace) { return }
            guard let (length, count) = Self.parse(line) else {
                try unrecognized.record(line, number: number, why: "not a folded stack (\"frames COUNT\")")
                return
            }
            let stack = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(line)[0..<length])
            // Integral counts are added exactly (up to 2^64-1 per stack); a larger one, or a sum that would
            // overflow, drops the line with a warning (an error with --strict), never a wrong number.
            let digits = UnsafeBufferPointer(rebasing: line[(length + 1)...])
            if !digits.contains(UInt8(ascii: ".")) {
                guard let whole = UInt64(String(decoding: digits, as: UTF8.self)) else {
                    try unrecognized.record(line, number: number, why: "count larger than 2^64-1")
                    return
                }
                if !stacks.add(bytes: stack, whole: whole) {
                    try unrecognized.record(line, number: number, why: "the stack's count would exceed 2^64-1")
                }
                return
            }
            stacks.add(bytes: stack, count: count)
        }
        unrecognized.report(to: &diagnostics)
    }
}
