#if canImport(Glibc)
import Glibc
#endif

/// Options of `stallprof diff`. Every field documents its default.
public struct DiffOptions: Sendable, Equatable {
    /// Scale the before counts so both profiles have the same total (compares shapes, not amounts). Default: false.
    public var normalize = false
    /// Replace hexadecimal numbers (`0x7f3a...`) in frame names by `0x...`, so addresses that moved between runs
    /// match. Default: false.
    public var stripHex = false

    /// Creates the default options.
    public init() {}
}

/// The two-count folded format (`stack before after`) that a differential flame graph draws: width from after,
/// colour from after minus before (difffolded.pl's output; inferno's rules for fractional counts, which are
/// truncated to integers with a warning).
public enum StackDiff {
    /// One profile made ready for ``diff(_:_:options:diagnostics:)``: hex numbers stripped as the options say and
    /// its stacks in byte order. Both sides can be prepared at once, one per core.
    public struct Side: Sendable {
        /// The stacks (hex numbers stripped when asked).
        let stacks: FoldedStacks
        /// Their entry numbers in byte order.
        let order: [Int]

        /// Prepares `stacks` as `options` say; tolerated problems go to `diagnostics`.
        public init(_ stacks: FoldedStacks, options: DiffOptions = DiffOptions(), diagnostics: inout Diagnostics) {
            self.stacks = StackDiff.prepared(stacks, options: options, diagnostics: &diagnostics)
            order = self.stacks.sortedIndices()
        }
    }

    /// One line per stack of either profile, byte-sorted; a stack missing from one side counts 0 there.
    public static func diff(before: FoldedStacks, after: FoldedStacks, options: DiffOptions = DiffOptions(),
                            diagnostics: inout Diagnostics) -> String
    {
        let old = Side(before, options: options, diagnostics: &diagnostics)
        let new = Side(after, options: options, diagnostics: &diagnostics)
        return String(decoding: diff(old, new, options: options, diagnostics: &diagnostics), as: UTF8.self)
    }

    /// The diff of two prepared sides, as bytes: a merge of the two byte-sorted lists (no hash lookup, no String
    /// per line), so linear after the sorts. Integral counts print exactly (up to 2^64-1).
    public static func diff(_ old: Side, _ new: Side, options: DiffOptions = DiffOptions(),
                            diagnostics: inout Diagnostics) -> [UInt8]
    {
        var scale = 1.0
        if options.normalize, old.stacks.total > 0 { scale = new.stacks.total / old.stacks.total }
        let scaled = options.normalize && scale != 1
        var fractional = false
        for side in [old, new] { side.stacks.forEachExact { _, _, fraction in fractional = fractional || fraction != 0 } }
        if fractional { diagnostics.warn("fractional counts are truncated to integers") }
        var out: [UInt8] = []
        var clamped = 0
        out.reserveCapacity(old.stacks.byteCount + new.stacks.byteCount + (old.order.count + new.order.count) * 12)
        old.stacks.withEntries { oldEntry in
            new.stacks.withEntries { newEntry in
                var (i, j) = (0, 0)
                while i < old.order.count || j < new.order.count {
                    let a = i < old.order.count ? oldEntry(old.order[i]) : nil
                    let b = j < new.order.count ? newEntry(new.order[j]) : nil
                    var order = 0  // < 0: only a; > 0: only b; 0: both
                    if let a, let b {
                        let common = min(a.bytes.count, b.bytes.count)
                        order = common == 0 ? 0 : Int(memcmp(a.bytes.baseAddress!, b.bytes.baseAddress!, common))
                        if order == 0 { order = a.bytes.count - b.bytes.count }
                    } else {
                        order = a == nil ? 1 : -1
                    }
                    let first = order <= 0 ? a : nil
                    let second = order >= 0 ? b : nil
                    if order <= 0 { i += 1 }
                    if order >= 0 { j += 1 }
                    out.append(contentsOf: (first ?? second)!.bytes)
                    out.append(UInt8(ascii: " "))
                    if scaled {
                        // Scaled up past 2^64-1 (AFTER's total is that large) it is written as 2^64-1, with a
                        // warning: every count diff writes is one every command reads back.
                        let count = first.map { Double($0.whole) + $0.fraction } ?? 0
                        let value = (count * scale).rounded(.towardZero)
                        if value < FoldedCount.limit {
                            out.append(contentsOf: FoldedStacks.format(value).utf8)
                        } else {
                            clamped += 1
                            append(.whole(.max), to: &out)
                        }
                    } else {
                        append(truncated(first.map { ($0.whole, $0.fraction) }), to: &out)
                    }
                    out.append(UInt8(ascii: " "))
                    append(truncated(second.map { ($0.whole, $0.fraction) }), to: &out)
                    out.append(UInt8(ascii: "\n"))
                }
            }
        }
        if clamped > 0 {
            diagnostics.warn("\(clamped) normalized BEFORE count\(clamped == 1 ? "" : "s") past 2^64-1 written as "
                + "18446744073709551615")
        }
        return out
    }

    /// An exact count truncated to an integer, as difffolded.pl's consumers read it (0 when missing): the integer
    /// itself, or the Double to print.
    enum Truncated {
        case whole(UInt64)
        case other(Double)
    }

    static func truncated(_ count: (whole: UInt64, fraction: Double)?) -> Truncated {
        guard let count else { return .whole(0) }
        if count.fraction == 0 { return .whole(count.whole) }
        return .other((Double(count.whole) + count.fraction).rounded(.towardZero))
    }

    /// Appends `count` in decimal, without allocating for integers.
    @inline(__always)
    static func append(_ count: Truncated, to out: inout [UInt8]) {
        switch count {
        case .whole(let value):
            var divisor: UInt64 = 1
            while value / divisor >= 10 { divisor *= 10 }
            while divisor > 0 {
                out.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                divisor /= 10
            }
        case .other(let value):
            out.append(contentsOf: FoldedStacks.format(value).utf8)
        }
    }

    /// `stacks` with hex numbers stripped as `options` say (counts kept exact).
    static func prepared(_ stacks: FoldedStacks, options: DiffOptions, diagnostics: inout Diagnostics) -> FoldedStacks {
        guard options.stripHex else { return stacks }
        var result = FoldedStacks()
        var overflowed: [String] = []
        stacks.forEachExact { bytes, whole, fraction in
            var stripped = strippingHex(String(decoding: bytes, as: UTF8.self))
            let added = stripped.withUTF8 { result.add(bytes: UnsafeRawBufferPointer($0), whole: whole, fraction: fraction) != nil }
            if !added { overflowed.append(stripped) }
        }
        // Stacks that differ only in addresses and whose counts sum beyond 2^64-1: dropped with a warning, never
        // a wrong number.
        for stack in overflowed {
            let shown = stack.count > 120 ? stack.prefix(120) + "..." : Substring(stack)
            diagnostics.warn("dropped a count of '\(shown)' after --strip-hex: the stack's count would exceed 2^64-1")
        }
        return result
    }

    /// `text` with every `0x` followed by hexadecimal digits replaced by `0x...`.
    static func strippingHex(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        func isHex(_ byte: UInt8) -> Bool {
            (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 70) || (byte >= 97 && byte <= 102)
        }
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "0"), index + 2 < bytes.count, bytes[index + 1] == UInt8(ascii: "x"),
                isHex(bytes[index + 2])
            {
                out += Array("0x...".utf8)
                index += 2
                while index < bytes.count, isHex(bytes[index]) { index += 1 }
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
