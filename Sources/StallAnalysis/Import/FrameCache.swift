#if canImport(Glibc)
import Glibc
#endif

/// Remembers what a perf frame line folded to, keyed by the line's bytes: a profile repeats the same few thousand
/// frame lines millions of times, so most lines cost one hash and one compare instead of a parse. Bounded: it starts
/// over when it holds `limit` bytes.
struct FrameCache {
    /// Keys and values, back to back.
    private var arena: [UInt8] = []
    /// key offset, key length, value length (the value follows the key), hash.
    private var entries: [(offset: Int, keyLength: Int, valueLength: Int, hash: UInt64)] = []
    /// Entry number + 1, 0 for empty; power-of-two size.
    private var slots = [Int32](repeating: 0, count: 1 << 12)
    /// The most bytes kept before starting over.
    let limit: Int

    /// A cache of at most `limit` bytes (default 8 MiB).
    init(limit: Int = 8 << 20) { self.limit = limit }

    /// Appends the value stored for `key` (with `flag` mixed into the key) to `out`; false when absent.
    func append(_ key: UnsafeBufferPointer<UInt8>, flag: Bool, to out: inout [UInt8]) -> Bool {
        let hash = Self.hash(key, flag)
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        return arena.withUnsafeBufferPointer { arena in
            while true {
                let stored = Int(slots[slot])
                if stored == 0 { return false }
                let entry = entries[stored - 1]
                if entry.hash == hash && entry.keyLength == key.count
                    && memcmp(arena.baseAddress! + entry.offset, key.baseAddress!, key.count) == 0
                {
                    let start = entry.offset + entry.keyLength
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: arena[start..<(start + entry.valueLength)]))
                    return true
                }
                slot = (slot + 1) & mask
            }
        }
    }

    /// Stores `value` for `key` and `flag`; only for a key that ``append(_:flag:to:)`` did not find.
    mutating func insert(_ key: UnsafeBufferPointer<UInt8>, flag: Bool, value: ArraySlice<UInt8>) {
        if arena.count + key.count + value.count > limit {
            arena.removeAll(keepingCapacity: true)
            entries.removeAll(keepingCapacity: true)
            for i in slots.indices { slots[i] = 0 }
        }
        let hash = Self.hash(key, flag)
        var mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while slots[slot] != 0 { slot = (slot + 1) & mask }
        entries.append((arena.count, key.count, value.count, hash))
        arena.append(contentsOf: key)
        arena.append(contentsOf: value)
        slots[slot] = Int32(entries.count)
        if entries.count * 2 > slots.count {
            slots = [Int32](repeating: 0, count: slots.count * 2)
            mask = slots.count - 1
            for (index, entry) in entries.enumerated() {
                var probe = Int(truncatingIfNeeded: entry.hash) & mask
                while slots[probe] != 0 { probe = (probe + 1) & mask }
                slots[probe] = Int32(index + 1)
            }
        }
    }

    @inline(__always) private static func hash(_ key: UnsafeBufferPointer<UInt8>, _ flag: Bool) -> UInt64 {
        FoldedStacks.hash(UnsafeRawBufferPointer(key)) ^ (flag ? 0x5851_F42D_4C95_7F2D : 0)
    }
}
