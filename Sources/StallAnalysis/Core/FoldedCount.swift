/// A count as every command takes it, whichever reader it comes from (folded text, a perf period, a speedscope
/// weight): an exact integer from 0 to 2^64-1, or a fraction held as a Double below 2^64 (compared after the
/// Double's rounding). Nothing else is a count: a folded count of 2^64 or more is refused, and so is any stack
/// whose counts would sum to 2^64 or more (``FoldedStacks`` keeps every stack's sum below it). Every count and
/// stack being below 2^64, a total of all stacks is a finite Double (at most 2^64 per stack), and every share,
/// width and ratio derived from counts is finite too: no command ends in a signal over a count.
public enum FoldedCount: Sendable, Equatable {
    /// An integral count, exactly.
    case whole(UInt64)
    /// A fractional count (its integral values, such as `2.0`, are ``whole(_:)``).
    case fraction(Double)

    /// 2^64 as a Double: counts and every stack's sum stay below it.
    public static let limit = 18_446_744_073_709_551_616.0

    /// What warnings call a refused count.
    public static let refusal = "count larger than 2^64-1"

    /// `value` as a count; nil when it is negative, not a number, infinite, or 2^64 or more.
    public init?(_ value: Double) {
        guard value >= 0, value < Self.limit else { return nil }  // false for NaN
        self = value == value.rounded() ? .whole(UInt64(value)) : .fraction(value)
    }

    /// The count spelled by `digits` (`\d+(\.\d*)?`, syntax already checked); nil when it is 2^64 or more.
    /// Integers are read exactly; fractions through the standard library's correctly rounded parser.
    @inline(__always)
    init?(digits: UnsafeBufferPointer<UInt8>) {
        guard digits.contains(UInt8(ascii: ".")) else {
            guard let whole = Self.integer(digits) else { return nil }
            self = .whole(whole)
            return
        }
        guard let value = Double(String(decoding: digits, as: UTF8.self)) else { return nil }
        self.init(value)
    }

    /// The exact value of decimal `digits`, or nil when it is larger than 2^64-1 (leading zeros allowed).
    @inline(__always)
    static func integer(_ digits: UnsafeBufferPointer<UInt8>) -> UInt64? {
        if digits.count <= 19 { return digits.reduce(0) { $0 * 10 + UInt64($1 - 48) } }
        var value: UInt64 = 0
        for digit in digits {
            let (times, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times.addingReportingOverflow(UInt64(digit - 48))
            guard !overflow, !carry else { return nil }
            value = sum
        }
        return value
    }

    /// The count as a Double (an integer beyond 2^53 rounds).
    public var value: Double {
        switch self {
        case .whole(let whole): return Double(whole)
        case .fraction(let fraction): return fraction
        }
    }

    /// The count exactly, when it is an integer.
    public var exact: UInt64? {
        if case .whole(let whole) = self { return whole }
        return nil
    }

    /// The integral part kept exactly and the fractional rest, as ``FoldedStacks`` stores a count.
    var parts: (whole: UInt64, fraction: Double) {
        switch self {
        case .whole(let whole): return (whole, 0)
        case .fraction(let fraction): return (0, fraction)
        }
    }
}
