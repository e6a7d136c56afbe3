import StallFormat

/// `value` with exactly `digits` decimals (half away from zero), without Foundation.
func fixed(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return "0" }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    guard scaled < 9e18 else { return String(value) }
    let units = UInt64(scaled)
    let divisor = UInt64(scale)
    var text = (value < 0 && units != 0 ? "-" : "") + String(units / divisor)
    if digits > 0 { text += "." + String(units % divisor).leftPadded(to: digits) }
    return text
}

/// A count with thousands separators (`1,234,567`); fractional counts keep their fraction.
func grouped(_ count: Double) -> String {
    let text = FoldedStacks.format(count)
    let isNegative = text.hasPrefix("-")
    let body = isNegative ? text.dropFirst() : Substring(text)
    let integer = body.prefix { $0 != "." }
    let rest = body.dropFirst(integer.count)
    var out = ""
    for (index, digit) in integer.enumerated() {
        if index > 0 && (integer.count - index) % 3 == 0 { out.append(",") }
        out.append(digit)
    }
    return (isNegative ? "-" : "") + out + rest
}

/// `text` escaped for XML by the codebase's one escaper, ``XMLEscaping/escaped(_:)`` (StallFormat).
func xmlEscaped<S: StringProtocol>(_ text: S) -> String { XMLEscaping.escaped(text) }

extension String {
    /// Left-padded with zeros to `width` characters.
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }

    /// Every occurrence of `target` replaced by `replacement`, without Foundation.
    func replacingOccurrences(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var out = ""
        var rest = self[...]
        while let range = rest.firstRange(of: target) {
            out += rest[..<range.lowerBound]
            out += replacement
            rest = rest[range.upperBound...]
        }
        return out + rest
    }

    /// Safe inside an XML comment: no `--`.
    func replacingDashes() -> String {
        var text = self
        while text.contains("--") { text = text.replacingOccurrences("--", with: "- -") }
        return text
    }
}
