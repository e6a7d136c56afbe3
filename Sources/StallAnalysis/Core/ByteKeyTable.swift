#if canImport(Glibc)
import Glibc
#endif

/// The one open-addressing hash table of the analysis: byte-string keys stored back to back in one arena, looked up
/// by a precomputed hash (``hash(_:)``) and a `memcmp`. Callers keep their values in arrays indexed by the entry
/// number it returns, so finding a key that is already there allocates nothing. ``FoldedStacks`` (stack -> count)
/// and the perf importer's ``FrameCache`` (frame line -> folded frame) are built on it.
struct ByteKeyTable: Sendable {
    /// Every key's bytes, back to back, in insertion order.
    private(set) var arena: [UInt8] = []
    /// Where each key lives in `arena` and its hash, in insertion order (the entry number is the index).
    private var keys: [Key] = []
    /// Entry number + 1, 0 for an empty slot. The size is a power of two, at most `quarters`/4 full.
    private var slots: [Int32]
    /// How full the slots may get, in quarters: 3 for sets that mostly find their keys (stacks), 2 for caches
    /// that often miss (a miss probes until an empty slot: about 8 slots at 3/4 full, 2.5 at 1/2).
    private let quarters: Int

    private struct Key: Sendable {
        var offset: Int
        var length: Int
        var hash: UInt64
    }

    /// An empty table with room for about `capacity` keys before it first grows (default 48), whose slots may
    /// get `quarters`/4 full (default 3, 3/4).
    init(capacity: Int = 48, quarters: Int = 3) {
        self.quarters = quarters
        var size = 64
        while size * quarters < capacity * 4 { size *= 2 }
        slots = Array(repeating: 0, count: size)
    }

    /// Number of keys.
    var count: Int { keys.count }

    /// Makes room for `bytes` more key bytes, so a large input's keys are not copied as the arena grows.
    mutating func reserveKeyBytes(_ bytes: Int) { arena.reserveCapacity(arena.count + bytes) }

    /// The entry number of `key` (whose ``hash(_:)`` is `hash`), or nil.
    @inline(__always)
    func find(_ key: UnsafeRawBufferPointer, hash: UInt64) -> Int? {
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        return arena.withUnsafeBytes { arena -> Int? in
            while true {
                let stored = Int(slots[slot])
                if stored == 0 { return nil }
                let entry = keys[stored - 1]
                if entry.hash == hash && entry.length == key.count
                    && (key.isEmpty || memcmp(arena.baseAddress! + entry.offset, key.baseAddress!, key.count) == 0)
                {
                    return stored - 1
                }
                slot = (slot + 1) & mask
            }
        }
    }

    /// The entry number of `key`, added when it was missing (`inserted` then true: the caller appends its value).
    @inline(__always)
    mutating func findOrInsert(_ key: UnsafeRawBufferPointer, hash: UInt64) -> (index: Int, inserted: Bool) {
        if let found = find(key, hash: hash) { return (found, false) }
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while slots[slot] != 0 { slot = (slot + 1) & mask }
        keys.append(Key(offset: arena.count, length: key.count, hash: hash))
        arena.append(contentsOf: key)
        slots[slot] = Int32(keys.count)
        if keys.count * 4 > slots.count * quarters { grow() }
        return (keys.count - 1, true)
    }

    /// Doubles the slots and re-inserts every key by its stored hash.
    private mutating func grow() {
        slots = Array(repeating: 0, count: slots.count * 2)
        let mask = slots.count - 1
        for (index, entry) in keys.enumerated() {
            var probe = Int(truncatingIfNeeded: entry.hash) & mask
            while slots[probe] != 0 { probe = (probe + 1) & mask }
            slots[probe] = Int32(index + 1)
        }
    }

    /// Forgets every key, keeping the memory (a bounded cache starting over).
    mutating func removeAll() {
        arena.removeAll(keepingCapacity: true)
        keys.removeAll(keepingCapacity: true)
        for index in slots.indices { slots[index] = 0 }
    }

    /// Where entry `index`'s key lies in ``arena``.
    @inline(__always)
    func range(of index: Int) -> Range<Int> {
        let entry = keys[index]
        return entry.offset..<entry.offset + entry.length
    }

    /// Calls `body` with every key's bytes and entry number, in insertion order.
    func forEach(_ body: (UnsafeRawBufferPointer, Int) throws -> Void) rethrows {
        try arena.withUnsafeBytes { raw in
            for (index, entry) in keys.enumerated() {
                try body(UnsafeRawBufferPointer(rebasing: raw[entry.offset..<entry.offset + entry.length]), index)
            }
        }
    }

    /// Entry numbers in byte order of their keys (the order `sort` gives with `LC_ALL=C`). Each key's first 8
    /// bytes, big-endian in one integer (zero-padded), decide most comparisons without a `memcmp`.
    func sortedIndices() -> [Int] {
        arena.withUnsafeBytes { raw -> [Int] in
            guard let base = raw.baseAddress else { return Array(keys.indices) }
            struct Item {
                var prefix: UInt64
                var offset: Int
                var length: Int
                var index: Int
            }
            var items = keys.enumerated().map { index, key -> Item in
                var prefix: UInt64 = 0
                for position in 0..<8 {
                    prefix <<= 8
                    if position < key.length { prefix |= UInt64(raw[key.offset + position]) }
                }
                return Item(prefix: prefix, offset: key.offset, length: key.length, index: index)
            }
            // Different prefixes order as the keys do (a zero pad sorts like the end of a shorter key); equal ones
            // need the whole comparison (a key may itself hold zero bytes).
            items.sort { x, y in
                if x.prefix != y.prefix { return x.prefix < y.prefix }
                let order = memcmp(base + x.offset, base + y.offset, min(x.length, y.length))
                return order != 0 ? order < 0 : x.length < y.length
            }
            return items.map(\.index)
        }
    }

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
