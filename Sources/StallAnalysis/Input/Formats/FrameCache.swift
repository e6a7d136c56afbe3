/// Remembers what a perf frame line folded to, keyed by the line's bytes: a profile repeats the same few thousand
/// frame lines millions of times, so most lines cost one hash and one compare instead of a parse. Bounded: it starts
/// over when it holds `limit` bytes. The keys live in a ``ByteKeyTable``, the values back to back in `values`.
struct FrameCache {
    /// The frame lines seen (with the flag mixed into the hash).
    private var table = ByteKeyTable(capacity: 2 << 10, quarters: 2)
    /// Every value's bytes, back to back.
    private var values: [UInt8] = []
    /// Where each entry's value lies in `values`, by entry number.
    private var ranges: [Range<Int>] = []
    /// The most bytes kept before starting over.
    let limit: Int

    /// A cache of at most `limit` bytes (default 8 MiB).
    init(limit: Int = 8 << 20) { self.limit = limit }

    /// Appends the value stored for `key` (with `flag` mixed into the key) to `out`; false when absent.
    func append(_ key: UnsafeBufferPointer<UInt8>, flag: Bool, to out: inout [UInt8]) -> Bool {
        let raw = UnsafeRawBufferPointer(key)
        guard let index = table.find(raw, hash: Self.hash(raw, flag)) else { return false }
        let range = ranges[index]
        values.withUnsafeBufferPointer { out.append(contentsOf: UnsafeBufferPointer(rebasing: $0[range])) }
        return true
    }

    /// Stores `value` for `key` and `flag`; only for a key that ``append(_:flag:to:)`` did not find.
    mutating func insert(_ key: UnsafeBufferPointer<UInt8>, flag: Bool, value: ArraySlice<UInt8>) {
        if table.arena.count + values.count + key.count + value.count > limit {
            table.removeAll()
            values.removeAll(keepingCapacity: true)
            ranges.removeAll(keepingCapacity: true)
        }
        let raw = UnsafeRawBufferPointer(key)
        let (index, inserted) = table.findOrInsert(raw, hash: Self.hash(raw, flag))
        guard inserted else { return }
        assert(index == ranges.count)
        ranges.append(values.count..<values.count + value.count)
        values.append(contentsOf: value)
    }

    /// The key's hash, different for the two values of `flag` (the same line folds differently with and without
    /// it), so a key is found only with the flag it was stored with.
    @inline(__always) private static func hash(_ key: UnsafeRawBufferPointer, _ flag: Bool) -> UInt64 {
        ByteKeyTable.hash(key) ^ (flag ? 0x5851_F42D_4C95_7F2D : 0)
    }
}
