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
        /// Everything else: fractional and negative counts, and integral ones that would overflow `whole`.
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

    /// Adds `count` to the stack made of `frames`, root first.
    public mutating func add<S: Sequence>(frames: S, count: Double = 1) where S.Element == String {
        add(folded: frames.joined(separator: ";"), count: count)
    }

    /// Adds `count` to an already folded stack.
    public mutating func add(folded: String, count: Double) {
        var text = folded
        text.withUTF8 { add(bytes: UnsafeRawBufferPointer($0), count: count) }
    }

    /// Adds `count` to the folded stack spelled by `bytes` (UTF-8, frames joined by `;`). The hot path of every
    /// importer.
    public mutating func add(bytes: UnsafeRawBufferPointer, count: Double) {
        if count >= 0, count == count.rounded(), count < 18_446_744_073_709_551_616.0,
            add(bytes: bytes, whole: UInt64(count), fraction: 0)
        {
            return
        }
        _ = add(bytes: bytes, whole: 0, fraction: count)
    }

    /// Adds the exact integer `whole` to the folded stack spelled by `bytes`; false, changing nothing, when the
    /// stack's count would exceed 2^64-1 (the caller reports it).
    @discardableResult
    public mutating func add(bytes: UnsafeRawBufferPointer, whole: UInt64) -> Bool {
        add(bytes: bytes, whole: whole, fraction: 0)
    }

    /// Adds `whole` and `fraction` to a stack; false, changing nothing, when `whole` would overflow.
    mutating func add(bytes: UnsafeRawBufferPointer, whole: UInt64, fraction: Double) -> Bool {
        let (index, inserted) = table.findOrInsert(bytes, hash: ByteKeyTable.hash(bytes))
        if inserted {
            entries.append(Entry(whole: whole, fraction: fraction))
            return true
        }
        let (sum, overflow) = entries[index].whole.addingReportingOverflow(whole)
        if overflow { return false }
        entries[index].whole = sum
        entries[index].fraction += fraction
        return true
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

    /// Adds every stack of `other`, exactly. Returns the stacks (folded text) whose integral count would have
    /// exceeded 2^64-1: those are left as they were here (the caller reports them), never a wrong number.
    @discardableResult
    public mutating func merge(_ other: FoldedStacks) -> [String] {
        var overflowed: [String] = []
        unit = CountUnit.combined(unit, other.unit)
        frameSources.merge(other.frameSources) { kept, _ in kept }
        other.table.forEach { bytes, index in
            let entry = other.entries[index]
            if !add(bytes: bytes, whole: entry.whole, fraction: entry.fraction) {
                overflowed.append(String(decoding: bytes, as: UTF8.self))
            }
        }
        return overflowed
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
    var sortedProfileStacks: [ProfileStack] {
        table.sortedIndices().map { index in
            let entry = entries[index]
            return ProfileStack(stack: String(decoding: table.arena[table.range(of: index)], as: UTF8.self),
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
