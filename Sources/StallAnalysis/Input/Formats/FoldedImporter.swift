/// The one reader of folded text (`root;...;leaf COUNT` lines, as written by stackcollapse-*, inferno, speedscope
/// and this tool), for every command: `fold`, `diff`, `report` and `export` sum the stacks into ``FoldedStacks``
/// (``importStacks(from:into:diagnostics:)``); `flamegraph` keeps the input order and the two counts of differential
/// `stack before after` lines (``read(_:into:diagnostics:)``). Both go through one loop
/// (``forEachCount(_:into:differential:diagnostics:_:)``), so they take and refuse the same counts with the same
/// warnings: a count is a ``FoldedCount`` (below 2^64), and a stack's sum stays below 2^64.
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

    /// An importer with the options of `fold`'s ``FoldOptions/folded``.
    public init(_ fold: FoldOptions) { self.init(options: fold.folded) }

    /// One folded line taken apart: where its stack and its (last) count lie.
    struct Line {
        /// The stack: everything before the blank in front of the count (may be empty).
        var stack: Range<Int>
        /// The digits of the count.
        var digits: Range<Int>
    }

    /// Splits `line` (without its newline) into stack and count; nil when it does not end in a count after a blank.
    /// The count's value is not read here: ``FoldedCount/init(digits:)`` reads it, for every command alike.
    @inline(__always)
    static func split(_ line: UnsafeBufferPointer<UInt8>) -> Line? {
        var end = line.count
        while end > 0, isBlank(line[end - 1]) { end -= 1 }
        guard let stackEnd = parse(UnsafeBufferPointer(rebasing: line[0..<end])) else { return nil }
        return Line(stack: 0..<stackEnd, digits: (stackEnd + 1)..<end)
    }

    /// The length of what comes before the one blank in front of the count that ends `line`, like flamegraph.pl's
    /// `^(.*)\s+?(\d+(?:\.\d*)?)$`; nil when there is no such count.
    static func parse(_ line: UnsafeBufferPointer<UInt8>) -> Int? {
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
        return start - 1
    }

    /// One line accepted by ``forEachCount(_:into:differential:diagnostics:_:)``: its parts, its count and, for a
    /// differential line, the count before.
    struct Counted {
        var parts: Line
        var count: FoldedCount
        /// For a `stack BEFORE AFTER` line read as differential: the stack without BEFORE, and BEFORE.
        var before: (stack: Range<Int>, count: FoldedCount)?
        /// The stack's entry number in the sums.
        var entry: Int
    }

    /// The one reader of folded counts, for every command: calls `body` with each line that holds a stack and a
    /// count, after adding the count to the line's stack in `sums` (the stack as `fold` keys it: everything before
    /// the last count). Blank and comment lines are skipped; a line without a count is reported as unrecognized; a
    /// line whose count (or, `differential`, whose BEFORE count) is 2^64 or more, or whose stack's count in
    /// `sums` would reach 2^64 with it, is skipped and reported ("count exceeds 2^64-1"). `--strict` makes
    /// either an error naming the line.
    func forEachCount(
        _ stream: ByteStream, into sums: inout FoldedStacks, differential: Bool, diagnostics: inout Diagnostics,
        _ body: (UnsafeBufferPointer<UInt8>, Counted, Int) throws -> Void
    ) throws {
        var unrecognized = UnrecognizedLines(path: stream.name, strict: options.strict)
        // Counts too large for the counting type are named as such, not as unrecognized lines.
        var overflowed = UnrecognizedLines(path: stream.name, strict: options.strict)
        overflowed.label = ("line whose count exceeds 2^64-1", "lines whose count exceeds 2^64-1")
        defer {
            unrecognized.report(to: &diagnostics)
            overflowed.report(to: &diagnostics)
        }
        try stream.forEachLine { line, number in
            guard let first = line.firstIndex(where: { !Self.isBlank($0) }) else { return }
            if line[first] == UInt8(ascii: "#"), first + 1 < line.count, line[first + 1] == UInt8(ascii: " ") {
                return
            }
            guard let parts = Self.split(line) else {
                try unrecognized.record(line, number: number, why: "not a folded stack (\"frames COUNT\")")
                return
            }
            guard let count = FoldedCount(digits: UnsafeBufferPointer(rebasing: line[parts.digits])) else {
                try overflowed.record(line, number: number, why: FoldedCount.refusal)
                return
            }
            var before: (Range<Int>, FoldedCount)? = nil
            if differential, let shorter = Self.parse(UnsafeBufferPointer(rebasing: line[parts.stack])) {
                guard let first = FoldedCount(
                    digits: UnsafeBufferPointer(rebasing: line[(shorter + 1)..<parts.stack.upperBound]))
                else {
                    try overflowed.record(line, number: number, why: FoldedCount.refusal + " (the count before)")
                    return
                }
                before = (0..<shorter, first)
            }
            let stack = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(line)[parts.stack])
            guard let entry = sums.add(bytes: stack, count) else {
                try overflowed.record(line, number: number, why: "the stack's count would exceed 2^64-1")
                return
            }
            try body(line, Counted(parts: parts, count: count, before: before, entry: entry), number)
        }
    }

    /// Streams the lines and adds each stack with its count (a two-count line's first count is part of its stack).
    public func importStacks(from stream: ByteStream, into stacks: inout FoldedStacks, diagnostics: inout Diagnostics)
        throws
    {
        // A file's size bounds its stacks' bytes (at most 256 MB reserved: untouched room costs nothing).
        if let size = stream.remainingFileBytes { stacks.reserveStackBytes(min(size, 256 << 20)) }
        try forEachCount(stream, into: &stacks, differential: false, diagnostics: &diagnostics) { _, _, _ in }
    }

    /// Streams the lines and appends each stack in input order; `stack before after` lines keep both counts.
    /// Counts are taken and refused exactly as ``importStacks(from:into:diagnostics:)`` takes them: each stack's
    /// sum (as `fold` keys it) is kept in `sums`, and `entries` gets, per appended stack, its entry number there.
    /// Stacks deeper than ``ProfileLoader/maxDepth`` are bad data (a flame graph could not draw them).
    func read(_ stream: ByteStream, into stacks: inout [WeightedStack], sums: inout FoldedStacks, entries: inout [Int],
              diagnostics: inout Diagnostics) throws
    {
        try forEachCount(stream, into: &sums, differential: true, diagnostics: &diagnostics) { line, counted, number in
            stacks.append(try Self.profileStack(line, counted, path: stream.name, number: number))
            entries.append(counted.entry)
        }
    }

    /// As ``read(_:into:sums:entries:diagnostics:)``, for one input on its own.
    public func read(_ stream: ByteStream, into stacks: inout [WeightedStack], diagnostics: inout Diagnostics) throws {
        var sums = FoldedStacks()
        var entries: [Int] = []
        try read(stream, into: &stacks, sums: &sums, entries: &entries, diagnostics: &diagnostics)
    }

    /// One line read as the flame graph reads it: the stack and its counts; nil when it holds no count, or a count
    /// of 2^64 or more.
    static func profileStack<S: StringProtocol>(_ text: S) -> WeightedStack? {
        var diagnostics = Diagnostics()
        var stacks: [WeightedStack] = []
        let importer = FoldedImporter()
        _ = try? importer.read(ByteStream(bytes: Array(text.utf8), name: ""), into: &stacks, diagnostics: &diagnostics)
        return stacks.count == 1 ? stacks[0] : nil
    }

    /// The stack of an accepted line, with the count before when it is differential.
    private static func profileStack(_ line: UnsafeBufferPointer<UInt8>, _ counted: Counted, path: String,
                                     number: Int) throws -> WeightedStack
    {
        let stack = counted.before?.stack ?? counted.parts.stack
        // Drawn without the blanks around it, as inferno draws it (`a;  5` has the leaf ``, not ` `).
        var (lower, upper) = (stack.lowerBound, stack.upperBound)
        while lower < upper, isBlank(line[lower]) { lower += 1 }
        while upper > lower, isBlank(line[upper - 1]) { upper -= 1 }
        let bytes = UnsafeBufferPointer(rebasing: line[lower..<upper])
        try ProfileLoader.checkDepth(bytes, path: path, position: "line \(number)")
        return WeightedStack(stack: String(decoding: bytes, as: UTF8.self), count: counted.count.value,
                            before: counted.before?.count.value, exact: counted.count.exact)
    }

    @inline(__always)
    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r")
    }
}
