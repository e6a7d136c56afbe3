/// How counts are written: integers as integers (up to 2^64-1), everything else in plain decimal, never in
/// exponent notation, so that any count written can be read back (`fold | fold`).
public enum CountFormat {
    /// `value` in plain decimal: integers without a fraction, others in the shortest digits that read back as the
    /// same Double, with the decimal point placed instead of an exponent (`1e-05` -> `0.00001`, `1e+20` ->
    /// `100000000000000000000`). Infinity and NaN are spelled `inf` and `nan`.
    public static func plain(_ value: Double) -> String {
        guard value.isFinite else { return value.isNaN ? "nan" : (value < 0 ? "-inf" : "inf") }
        if value == value.rounded() {
            if value >= 0, value < 18_446_744_073_709_551_616.0 { return String(UInt64(value)) }
            if value < 0, value >= -9_223_372_036_854_775_808.0 { return String(Int64(value)) }
        }
        let text = value.description
        let negative = text.hasPrefix("-")
        let unsigned = negative ? String(text.dropFirst()) : text
        let parts = unsigned.split(separator: "e", maxSplits: 1)
        let mantissa = parts[0]
        let exponent = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
        let point = mantissa.firstIndex(of: ".").map { mantissa.distance(from: mantissa.startIndex, to: $0) }
            ?? mantissa.count
        var digits = Array(mantissa.filter { $0 != "." })
        var position = point + exponent  // digits before the decimal point
        while digits.count > 1, digits.first == "0", position > 1 {
            digits.removeFirst()
            position -= 1
        }
        var result: String
        if position <= 0 {
            result = "0." + String(repeating: "0", count: -position) + String(digits)
        } else if position >= digits.count {
            result = String(digits) + String(repeating: "0", count: position - digits.count)
        } else {
            result = String(digits[..<position]) + "." + String(digits[position...])
        }
        if result.contains(".") {
            while result.hasSuffix("0") { result.removeLast() }
            if result.hasSuffix(".") { result.removeLast() }
        }
        return negative ? "-" + result : result
    }

    /// A count kept as an exact integer part and a fractional remainder: the integer alone when there is no
    /// remainder (exact up to 2^64-1), otherwise their sum in plain decimal (to Double precision, 53 bits).
    /// Stacks' counts stay below 2^64 (``FoldedCount``), so every count written this way is read back.
    public static func exact(whole: UInt64, fraction: Double) -> String {
        if fraction == 0 { return String(whole) }
        return plain(Double(whole) + fraction)
    }
}

/// A sum of counts kept exactly: integral counts in a `UInt64` (up to 2^64-1), fractional ones in a Double, so
/// that a report or a chart prints the integer a folded file holds, not its nearest Double.
public struct ExactSum: Sendable, Equatable {
    /// The integral part.
    public private(set) var whole: UInt64 = 0
    /// The fractional counts (and nothing else).
    public private(set) var fraction: Double = 0
    /// True once the sum reached 2^64 (its integral part past 2^64-1, or with fractions, its value as a Double 2^64
    /// or more): ``text`` is then nil (callers warn and print the Double).
    public private(set) var overflowed = false

    /// Zero.
    public init() {}

    /// Adds an exact count (integer part, fractional rest).
    public mutating func add(whole: UInt64, fraction: Double) {
        let (sum, overflow) = self.whole.addingReportingOverflow(whole)
        if overflow { overflowed = true }
        self.whole = sum
        self.fraction += fraction
        if self.fraction != 0, !(Double(self.whole) + self.fraction < FoldedCount.limit) { overflowed = true }
    }

    /// The sum as a Double.
    public var value: Double { Double(whole) + fraction }

    /// The sum as folded files write it (``CountFormat/exact(whole:fraction:)``), nil when it overflowed.
    public var text: String? { overflowed ? nil : CountFormat.exact(whole: whole, fraction: fraction) }
}
