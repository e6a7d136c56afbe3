/// Number, time and name formatting shared by the report's renderers.
enum ReportFormat {
    /// `97%` (table cells); `-` for nil. Ratios are clamped to [0, 1] first.
    static func percent(_ ratio: Double?) -> String {
        guard let ratio, ratio.isFinite else { return "-" }
        return "\(Int((min(max(ratio, 0), 1) * 100).rounded()))%"
    }

    /// `97 %` (sentences).
    static func percentSpaced(_ ratio: Double) -> String {
        "\(Int((min(max(ratio, 0), 1) * 100).rounded())) %"
    }

    /// `0.983 s` below 10 s, `12 s` above.
    static func seconds(_ ns: UInt64) -> String { seconds(Double(ns) / 1e9) }

    /// `0.983 s` below 10 s, `12 s` above.
    static func seconds(_ value: Double) -> String {
        value < 10 ? threeDecimals(value) + " s" : String(Int(value.rounded())) + " s"
    }

    /// `250 ms`, or `0.500 ms` when not whole.
    static func milliseconds(_ ns: UInt64) -> String {
        ns % 1_000_000 == 0 ? "\(ns / 1_000_000) ms" : threeDecimals(Double(ns) / 1e6) + " ms"
    }

    /// A non-negative value with three decimals.
    static func threeDecimals(_ value: Double) -> String {
        let thousandths = Int((max(value, 0) * 1000).rounded())
        let fraction = String(thousandths % 1000)
        return "\(thousandths / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }

    /// `value` rounded to `decimals` places (for JSON numbers).
    static func rounded(_ value: Double, _ decimals: Int) -> Double {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        return (value * scale).rounded() / scale
    }

    /// Civil date and time (UTC) of `ns` nanoseconds since the Unix epoch.
    static func civil(_ ns: UInt64)
        -> (year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int, milli: Int)
    {
        let millis = Int(ns / 1_000_000)
        let days = millis / 86_400_000, inDay = millis % 86_400_000
        // Howard Hinnant's days-to-civil algorithm.
        let z = days + 719_468
        let era = z / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day, inDay / 3_600_000, inDay / 60_000 % 60, inDay / 1000 % 60, inDay % 1000)
    }

    /// ISO 8601 UTC with milliseconds: `2026-11-30T21:00:00.123Z`.
    static func iso8601(_ ns: UInt64) -> String {
        let c = civil(ns)
        return "\(pad(c.year, 4))-\(pad(c.month, 2))-\(pad(c.day, 2))T\(clock(ns))Z"
    }

    /// `2026-11-30`.
    static func date(_ ns: UInt64) -> String {
        let c = civil(ns)
        return "\(pad(c.year, 4))-\(pad(c.month, 2))-\(pad(c.day, 2))"
    }

    /// `21:00:00.123` (UTC).
    static func clock(_ ns: UInt64) -> String {
        let c = civil(ns)
        return "\(pad(c.hour, 2)):\(pad(c.minute, 2)):\(pad(c.second, 2)).\(pad(c.milli, 3))"
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }

    /// `prefix` followed by `function` shortened to what is left of `width` (only the function is shortened as a
    /// name; a prefix longer than the width is cut with `…`). A line that fits is returned whole.
    static func fit(_ prefix: String, then function: String, width: Int) -> String {
        guard prefix.columns + function.columns > width else { return prefix + function }
        guard prefix.columns < width - 1 else { return prefix.prefix(columns: max(0, width - 1)) + "…" }
        return prefix + fit(function, width: width - prefix.columns)
    }

    /// `name` shortened to at most `width` columns (a wide character, CJK or emoji, takes two): first a private name's discriminator and the return type
    /// go, then a specialization's prefix becomes `specialized`, then the contents of parameter lists and generic
    /// arguments become `…`, then the end is cut with `…`.
    static func fit(_ name: String, width: Int) -> String {
        guard name.columns > width, width > 1 else { return name }
        if name.hasSuffix("@plt") && width > 5 { return fit(String(name.dropLast(4)), width: width - 4) + "@plt" }
        var text = withoutDiscriminators(name)
        guard text.columns > width else { return text }
        if let arrow = topLevelArrow(text) { text = String(text[..<arrow]) }
        let subject = AppCodeRule.specializationSubject(text)
        if text.columns > width && subject.count < text.count { text = "specialized " + subject }
        if text.columns > width { text = elideGroups(text) }
        if text.columns > width { text = text.prefix(columns: width - 1) + "…" }
        return text
    }

    /// `(pass in _C317CB8B6FF4787DE7E9A80FE96A7AF6)` (a private name's discriminator) becomes `pass`.
    static func withoutDiscriminators(_ name: String) -> String {
        var result = "", rest = Substring(name)
        while let open = rest.firstIndex(of: "(") {
            result += rest[..<open]
            let after = rest[rest.index(after: open)...]
            if let marker = after.firstRange(of: " in _"), let close = after[marker.upperBound...].firstIndex(of: ")"),
                !after[..<marker.lowerBound].contains(where: { " ()<>,".contains($0) }),
                after[marker.upperBound..<close].allSatisfy(\.isHexDigit)
            {
                result += after[..<marker.lowerBound]
                rest = after[after.index(after: close)...]
            } else {
                result += "("
                rest = after
            }
        }
        return result + rest
    }

    /// Where ` -> ` begins outside every bracket, the last such place.
    private static func topLevelArrow(_ text: String) -> String.Index? {
        var depth = 0, found: String.Index? = nil
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if character == "(" || character == "<" || character == "[" { depth += 1 }
            let arrowHead = character == ">" && text[..<index].hasSuffix("-")
            if character == ")" || character == "]" || (character == ">" && !arrowHead) { depth -= 1 }
            if depth == 0, text[index...].hasPrefix(" -> ") { found = index }
            index = text.index(after: index)
        }
        return found
    }

    /// Every outermost `(...)` and `<...>` group with content replaced by `(…)` / `<…>`.
    /// A leading `(extension in Module):` stays.
    private static func elideGroups(_ text: String) -> String {
        var result = "", depth = 0, previous: Character = " ", hadContent = false
        var rest = Substring(text)
        if text.hasPrefix("("), let close = text.firstIndex(of: ")") {
            result = String(text[...close])
            rest = text[text.index(after: close)...]
        }
        for character in rest {
            defer { previous = character }
            let opens = character == "(" || character == "<"
            let closes = character == ")" || (character == ">" && previous != "-")
            if opens {
                if depth == 0 { result.append(character); hadContent = false } else { hadContent = true }
                depth += 1
            } else if closes && depth > 0 {
                depth -= 1
                if depth == 0 { result += (hadContent ? "…" : "") + String(character) }
            } else if depth == 0 {
                result.append(character)
            } else {
                hadContent = true
            }
        }
        return result
    }
}

extension String {
    /// Every occurrence of `target` replaced by `replacement`.
    func replacingAll(_ target: String, by replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var result = "", rest = Substring(self)
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound] + replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}

extension StringProtocol {
    /// The columns a terminal gives the text: two for each wide character (East Asian wide and full-width forms,
    /// emoji), none for a combining mark, one for the rest.
    var columns: Int { unicodeScalars.reduce(0) { $0 + $1.columns } }

    /// The longest start of the text that fits in `width` columns.
    func prefix(columns width: Int) -> String {
        var used = 0, result = ""
        for character in self {
            let needed = character.unicodeScalars.reduce(0) { $0 + $1.columns }
            if used + needed > width { break }
            used += needed
            result.append(character)
        }
        return result
    }
}

extension Unicode.Scalar {
    /// 2 for a wide scalar, 0 for a combining mark or a zero-width one, 1 otherwise.
    var columns: Int {
        let v = value
        if v < 0x300 { return 1 }
        if (0x300...0x36F).contains(v) || (0x200B...0x200F).contains(v) || (0xFE00...0xFE0F).contains(v) { return 0 }
        return Self.wide.contains { $0.contains(v) } ? 2 : 1
    }

    /// East Asian wide and full-width ranges, and the emoji blocks.
    private static let wide: [ClosedRange<UInt32>] = [
        0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
        0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x1F300...0x1F64F,
        0x1F900...0x1F9FF, 0x20000...0x3FFFD,
    ]
}

