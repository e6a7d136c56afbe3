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
    /// One line per stack of either profile, byte-sorted; a stack missing from one side counts 0 there.
    public static func diff(before: FoldedStacks, after: FoldedStacks, options: DiffOptions = DiffOptions(),
                            diagnostics: inout Diagnostics) -> String
    {
        let old = prepared(before, options: options)
        let new = prepared(after, options: options)
        var scale = 1.0
        if options.normalize, old.total > 0 { scale = new.total / old.total }
        var fractional = false
        for side in [old, new] { side.forEach { _, count in fractional = fractional || count != count.rounded(.towardZero) } }
        if fractional { diagnostics.warn("fractional counts are truncated to integers") }
        var merged = old
        merged.merge(new)
        // One hash lookup per stack and side: linear in the input (`counts` builds a dictionary on every call).
        var out = ""
        for (stack, _) in merged.sorted {
            let first = options.normalize && scale != 1
                ? FoldedStacks.format(((old.count(of: stack) ?? 0) * scale).rounded(.towardZero))
                : truncated(old.exactCount(of: stack))
            out += "\(stack) \(first) \(truncated(new.exactCount(of: stack)))\n"
        }
        return out
    }

    /// An exact count truncated to an integer, as difffolded.pl's consumers read it (0 when missing).
    static func truncated(_ count: (whole: UInt64, fraction: Double)?) -> String {
        guard let count else { return "0" }
        if count.fraction == 0 { return String(count.whole) }
        return FoldedStacks.format((Double(count.whole) + count.fraction).rounded(.towardZero))
    }

    /// `stacks` with hex numbers stripped as `options` say.
    static func prepared(_ stacks: FoldedStacks, options: DiffOptions) -> FoldedStacks {
        guard options.stripHex else { return stacks }
        var result = FoldedStacks()
        for (stack, count) in stacks.counts { result.add(folded: strippingHex(stack), count: count) }
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
