#if canImport(Glibc)
import Glibc
#endif

/// Weighted stacks keyed by their folded form (`root;...;leaf`): what every importer produces and every output
/// consumes.
///
/// Stored as bytes in one arena with an open-addressing index, so adding a stack that is already known costs a
/// hash and a compare and allocates nothing; memory grows with the number of distinct stacks only.
public struct FoldedStacks: Sendable, Equatable {
    /// Every distinct stack's bytes, back to back.
    private var arena: [UInt8] = []
    /// Where each distinct stack lives in `arena`, and its count, in first-seen order.
    private var entries: [Entry] = []
    /// Open-addressing index: entry number + 1, 0 for an empty slot. The size is a power of two.
    private var slots: [Int32] = Array(repeating: 0, count: 64)

    private struct Entry: Sendable {
        var offset: Int
        var length: Int
        var hash: UInt64
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

    /// Adds `whole` and `fraction` to a stack; false when `whole` would overflow.
    private mutating func add(bytes: UnsafeRawBufferPointer, whole: UInt64, fraction: Double) -> Bool {
        let hash = Self.hash(bytes)
        var mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let stored = Int(slots[slot])
            if stored == 0 { break }
            let entry = entries[stored - 1]
            if entry.hash == hash && entry.length == bytes.count
                && arena.withUnsafeBytes({ memcmp($0.baseAddress! + entry.offset, bytes.baseAddress!, bytes.count) })
                    == 0
            {
                let (sum, overflow) = entry.whole.addingReportingOverflow(whole)
                if overflow { return false }
                entries[stored - 1].whole = sum
                entries[stored - 1].fraction += fraction
                return true
            }
            slot = (slot + 1) & mask
        }
        entries.append(Entry(offset: arena.count, length: bytes.count, hash: hash, whole: whole, fraction: fraction))
        arena.append(contentsOf: bytes)
        slots[slot] = Int32(entries.count)
        if entries.count * 4 > slots.count * 3 {
            slots = Array(repeating: 0, count: slots.count * 2)
            mask = slots.count - 1
            for (index, entry) in entries.enumerated() {
                var probe = Int(truncatingIfNeeded: entry.hash) & mask
                while slots[probe] != 0 { probe = (probe + 1) & mask }
                slots[probe] = Int32(index + 1)
            }
        }
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

    /// The entry number of the stack spelled by `bytes`.
    private func index(of bytes: UnsafeRawBufferPointer) -> Int? {
        let hash = Self.hash(bytes)
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let stored = Int(slots[slot])
            if stored == 0 { return nil }
            let entry = entries[stored - 1]
            if entry.hash == hash && entry.length == bytes.count
                && (bytes.isEmpty || arena.withUnsafeBytes({
                    memcmp($0.baseAddress! + entry.offset, bytes.baseAddress!, bytes.count) }) == 0)
            {
                return stored - 1
            }
            slot = (slot + 1) & mask
        }
    }

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
        other.arena.withUnsafeBytes { raw in
            for entry in other.entries {
                let bytes = UnsafeRawBufferPointer(rebasing: raw[entry.offset..<entry.offset + entry.length])
                if !add(bytes: bytes, whole: entry.whole, fraction: entry.fraction) {
                    overflowed.append(String(decoding: bytes, as: UTF8.self))
                }
            }
        }
        return overflowed
    }

    /// Calls `body` with each distinct stack's bytes and count, in first-seen order.
    public func forEach(_ body: (UnsafeRawBufferPointer, Double) throws -> Void) rethrows {
        try arena.withUnsafeBytes { raw in
            for entry in entries {
                try body(UnsafeRawBufferPointer(rebasing: raw[entry.offset..<entry.offset + entry.length]), entry.count)
            }
        }
    }

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

    /// Entry numbers in byte order of their stacks (the order `sort` gives with `LC_ALL=C`).
    private func sortedIndices() -> [Int] {
        arena.withUnsafeBytes { raw -> [Int] in
            let base = raw.baseAddress!
            return entries.indices.sorted { a, b in
                let x = entries[a], y = entries[b]
                let order = memcmp(base + x.offset, base + y.offset, min(x.length, y.length))
                return order != 0 ? order < 0 : x.length < y.length
            }
        }
    }

    /// Stacks in byte order of their folded text (the order `sort` gives with `LC_ALL=C`).
    public var sorted: [(stack: String, count: Double)] {
        sortedIndices().map { index in
            let entry = entries[index]
            let text = arena.withUnsafeBytes {
                String(decoding: UnsafeRawBufferPointer(rebasing: $0[entry.offset..<entry.offset + entry.length]),
                       as: UTF8.self)
            }
            return (stack: text, count: entry.count)
        }
    }

    /// The folded text as bytes: `stack count` lines, byte-sorted, each ending in a newline.
    public func renderedBytes() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(arena.count + entries.count * 12)
        for index in sortedIndices() {
            let entry = entries[index]
            out.append(contentsOf: arena[entry.offset..<entry.offset + entry.length])
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

    /// A fast 64-bit hash of `bytes` (8 bytes at a time, multiply-xorshift mixing).
    @inline(__always)
    static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var h: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(bytes.count)
        var index = 0
        let count = bytes.count
        while index + 8 <= count {
            let word = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            h = (h ^ word) &* 0xFF51_AFD7_ED55_8CCD
            h ^= h >> 32
            index += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while index < count {
            tail |= UInt64(bytes[index]) << shift
            shift += 8
            index += 1
        }
        h = (h ^ tail) &* 0xC4CE_B9FE_1A85_EC53
        h ^= h >> 29
        return h
    }
}
