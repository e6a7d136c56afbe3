/// Weighted stacks keyed by their folded form (`root;...;leaf`): what every importer produces and every output
/// consumes.
///
/// Stored as bytes in one ``ByteKeyTable``, so adding a stack that is already known costs a hash and a compare
/// and allocates nothing; memory grows with the number of distinct stacks only. The empty stack (a folded line
/// such as py-spy's ` 2`) is a stack like any other: it counts in the total and has no frames.
public struct FoldedStacks: Sendable, Equatable {
    /// Every distinct stack's bytes, keyed in first-seen order.
    private var table = ByteKeyTable()
    /// Each distinct stack's count, by entry number.
    private var entries: [Entry] = []

    private struct Entry: Sendable {
        /// The integer part of the count, exact (integral counts from 0 to 2^64-1 are added here).
        var whole: UInt64
        /// The fractional counts (their sum, at least 0); `whole + fraction` stays below 2^64.
        var fraction: Double
        /// The count as a Double.
        var count: Double { Double(whole) + fraction }
    }

    /// What the counts measure, when an importer knows (``CountUnit``); nil: samples, or unknown for folded text.
    /// ``merge(_:)`` combines the two units. Default: nil.
    public var unit: CountUnit? = nil

    /// Where a frame name's code is, when the input says (speedscope's `file` and `line`), by name; the first
    /// source seen for a name is kept. The pprof export writes them as the function's file and the line.
    /// Default: empty.
    public var frameSources: [String: FrameSource] = [:]

    /// Creates an empty set.
    public init() {}

    /// Adds `count` to the stack made of `frames`, root first; false, changing nothing, when `count` is not a count
    /// (``FoldedCount``) or the stack's count would reach 2^64 (the caller reports it).
    @discardableResult
    public mutating func add<S: Sequence>(frames: S, count: Double = 1) -> Bool where S.Element == String {
        add(folded: frames.joined(separator: ";"), count: count)
    }

    /// Adds `count` to an already folded stack; false as ``add(frames:count:)``.
    @discardableResult
    public mutating func add(folded: String, count: Double) -> Bool {
        var text = folded
        return text.withUTF8 { add(bytes: UnsafeRawBufferPointer($0), count: count) }
    }

    /// Adds `count` to the folded stack spelled by `bytes` (UTF-8, frames joined by `;`); false, changing nothing,
    /// when `count` is negative, not finite or 2^64 or more, or the stack's count would reach 2^64. The hot path of
    /// every importer.
    @discardableResult
    public mutating func add(bytes: UnsafeRawBufferPointer, count: Double) -> Bool {
        guard let count = FoldedCount(count) else { return false }
        return add(bytes: bytes, count) != nil
    }

    /// Adds the exact integer `whole` to the folded stack spelled by `bytes`; false, changing nothing, when the
    /// stack's count would exceed 2^64-1 (the caller reports it).
    @discardableResult
    public mutating func add(bytes: UnsafeRawBufferPointer, whole: UInt64) -> Bool {
        add(bytes: bytes, whole: whole, fraction: 0) != nil
    }

    /// Adds `count` to the folded stack spelled by `bytes`; its entry number, or nil, changing nothing, when the
    /// stack's count would reach 2^64.
    @inline(__always)
    mutating func add(bytes: UnsafeRawBufferPointer, _ count: FoldedCount) -> Int? {
        let (whole, fraction) = count.parts
        return add(bytes: bytes, whole: whole, fraction: fraction)
    }

    /// Adds `whole` and `fraction` (a valid count's parts) to a stack: its entry number, or nil, changing nothing,
    /// when the stack's count would reach 2^64 (its integral part past 2^64-1, or with a fraction, its value as a
    /// Double 2^64 or more).
    mutating func add(bytes: UnsafeRawBufferPointer, whole: UInt64, fraction: Double) -> Int? {
        if fraction != 0, !(Double(whole) + fraction < FoldedCount.limit) { return nil }
        let (index, inserted) = table.findOrInsert(bytes, hash: ByteKeyTable.hash(bytes))
        if inserted {
            entries.append(Entry(whole: whole, fraction: fraction))
            return index
        }
        let (sum, overflow) = entries[index].whole.addingReportingOverflow(whole)
        if overflow { return nil }
        let rest = entries[index].fraction + fraction
        if rest != 0, !(Double(sum) + rest < FoldedCount.limit) { return nil }
        entries[index].whole = sum
        entries[index].fraction = rest
        return index
    }

    /// The count of the folded stack spelled by `bytes`, nil when it is not in the set. A hash lookup: O(length).
    public func count(of bytes: UnsafeRawBufferPointer) -> Double? {
        index(of: bytes).map { entries[$0].count }
    }

    /// The exact count of the already folded stack `folded`: its integer part and the fractional rest.
    public func exactCount(of folded: String) -> (whole: UInt64, fraction: Double)? {
        var text = folded
        return text.withUTF8 { index(of: UnsafeRawBufferPointer($0)).map { (entries[$0].whole, entries[$0].fraction) } }
    }

    /// Calls `body` with each distinct stack's bytes and exact count (integer part, fractional rest), in
    /// first-seen order.
    func forEachExact(_ body: (UnsafeRawBufferPointer, UInt64, Double) throws -> Void) rethrows {
        try table.forEach { bytes, index in try body(bytes, entries[index].whole, entries[index].fraction) }
    }

    /// Entry numbers in byte order of their stacks' folded text (for ``withEntries(_:)``).
    func sortedIndices() -> [Int] { table.sortedIndices() }

    /// Calls `body` with a reader of entry `index`'s bytes and exact count (integer part, fractional rest); the
    /// bytes are valid inside `body` only.
    func withEntries<R>(_ body: ((Int) -> (bytes: UnsafeBufferPointer<UInt8>, whole: UInt64, fraction: Double)) throws -> R)
        rethrows -> R
    {
        try table.arena.withUnsafeBufferPointer { arena in
            try body { index in
                let range = table.range(of: index)
                let entry = entries[index]
                return (UnsafeBufferPointer(rebasing: arena[range]), entry.whole, entry.fraction)
            }
        }
    }

    /// The entry number of the stack spelled by `bytes`.
    private func index(of bytes: UnsafeRawBufferPointer) -> Int? { table.find(bytes, hash: ByteKeyTable.hash(bytes)) }

    /// The count of the already folded stack `folded`, nil when it is not in the set.
    public func count(of folded: String) -> Double? {
        var text = folded
        return text.withUTF8 { count(of: UnsafeRawBufferPointer($0)) }
    }

    /// Adds every stack of `other`, exactly. Returns the stacks (folded text) whose count would have reached 2^64:
    /// those are left as they were here (the caller reports them), never a wrong number.
    @discardableResult
    public mutating func merge(_ other: FoldedStacks) -> [String] {
        let refused = mergeReportingEntries(other)
        return other.withEntries { entry in refused.map { String(decoding: entry($0).bytes, as: UTF8.self) } }
    }

    /// As ``merge(_:)``; returns the entry numbers, in `other`, of the stacks left out.
    mutating func mergeReportingEntries(_ other: FoldedStacks) -> [Int] {
        var refused: [Int] = []
        unit = CountUnit.combined(unit, other.unit)
        frameSources.merge(other.frameSources) { kept, _ in kept }
        if count == 0 {
            let kept = (unit, frameSources)
            self = other
            (unit, frameSources) = kept
            return []
        }
        other.table.forEach { bytes, index in
            let entry = other.entries[index]
            if add(bytes: bytes, whole: entry.whole, fraction: entry.fraction) == nil { refused.append(index) }
        }
        return refused
    }

    /// These stacks without the entries numbered in `left` (their first-seen order kept).
    func removing(_ left: Set<Int>) -> FoldedStacks {
        guard !left.isEmpty else { return self }
        var result = FoldedStacks()
        result.unit = unit
        result.frameSources = frameSources
        table.forEach { bytes, index in
            if !left.contains(index) {
                _ = result.add(bytes: bytes, whole: entries[index].whole, fraction: entries[index].fraction)
            }
        }
        return result
    }

    /// Calls `body` with each distinct stack's bytes and count, in first-seen order.
    public func forEach(_ body: (UnsafeRawBufferPointer, Double) throws -> Void) rethrows {
        try table.forEach { bytes, index in try body(bytes, entries[index].count) }
    }

    /// Makes room for `bytes` more bytes of stacks (an input's size bounds them): no copy as the set grows.
    public mutating func reserveStackBytes(_ bytes: Int) { table.reserveKeyBytes(bytes) }

    /// Total length of every distinct stack's folded text, in bytes.
    var byteCount: Int { table.arena.count }

    /// Number of distinct stacks.
    public var count: Int { entries.count }

    /// Sum of all counts.
    public var total: Double { entries.reduce(0) { $0 + $1.count } }

    /// Count per folded stack.
    public var counts: [String: Double] {
        var result: [String: Double] = [:]
        forEach { bytes, count in result[String(decoding: bytes, as: UTF8.self), default: 0] += count }
        return result
    }

    /// Two sets are equal when they hold the same stacks with the same counts.
    public static func == (lhs: FoldedStacks, rhs: FoldedStacks) -> Bool { lhs.counts == rhs.counts }

    /// Stacks in byte order of their folded text (the order `sort` gives with `LC_ALL=C`).
    public var sorted: [(stack: String, count: Double)] {
        table.sortedIndices().map { index in
            (stack: String(decoding: table.arena[table.range(of: index)], as: UTF8.self), count: entries[index].count)
        }
    }

    /// The stacks in byte order as a profile's entries, integral counts with their exact value.
    var sortedWeightedStacks: [WeightedStack] {
        table.sortedIndices().map { index in
            let entry = entries[index]
            return WeightedStack(stack: String(decoding: table.arena[table.range(of: index)], as: UTF8.self),
                                count: entry.count, exact: entry.fraction == 0 ? entry.whole : nil)
        }
    }

    /// The folded text as bytes: `stack count` lines, byte-sorted, each ending in a newline.
    public func renderedBytes() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(table.arena.count + entries.count * 12)
        for index in table.sortedIndices() {
            let entry = entries[index]
            out.append(contentsOf: table.arena[table.range(of: index)])
            out.append(UInt8(ascii: " "))
            out.append(contentsOf: CountFormat.exact(whole: entry.whole, fraction: entry.fraction).utf8)
            out.append(UInt8(ascii: "\n"))
        }
        return out
    }

    /// The folded text: `stack count` lines, byte-sorted, each ending in a newline.
    public func rendered() -> String { String(decoding: renderedBytes(), as: UTF8.self) }

    /// A count as folded files write it: integers without a fraction, others in plain decimal (``CountFormat``).
    public static func format(_ count: Double) -> String { CountFormat.plain(count) }
}

/// A frame's source file and line, where an input gives them.
public struct FrameSource: Sendable, Hashable {
    /// The source file; nil when not given.
    public var file: String?
    /// The line; nil when not given.
    public var line: Int?

    /// Creates a source.
    public init(file: String?, line: Int?) {
        self.file = file
        self.line = line
    }
}
