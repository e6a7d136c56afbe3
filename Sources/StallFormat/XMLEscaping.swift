/// The one XML/HTML escaper of the codebase: the SVG flame graph (StallAnalysis) and the JUnit report of `bisect`
/// (StallBisect) both write markup through it, so both give well-formed XML 1.0 for any Swift string.
public enum XMLEscaping {
    /// `text` escaped for XML 1.0 text and attribute values (double- or single-quoted): `&`, `<`, `>`, `"` and `'`
    /// become entities; tab, line feed and carriage return stay; every other character XML 1.0 forbids (the other
    /// C0 controls, NUL among them, and U+FFFE, U+FFFF) becomes U+FFFD, the replacement character, so one bad
    /// name never makes the whole document unreadable. (Lone surrogates cannot occur in a Swift string.)
    public static func escaped<S: StringProtocol>(_ text: S) -> String {
        guard text.utf8.contains(where: mayNeedEscaping) else { return String(text) }
        var out = ""
        out.reserveCapacity(text.utf8.count + 16)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\t", "\n", "\r": out.unicodeScalars.append(scalar)
            case _ where !isAllowed(scalar): out += "\u{FFFD}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// True when a UTF-8 `byte` may start something ``escaped(_:)`` changes: a markup character, a C0 control, or
    /// 0xEF (the lead byte of U+FFFE and U+FFFF). Text without such a byte is copied as it is.
    @inlinable
    public static func mayNeedEscaping(_ byte: UInt8) -> Bool {
        byte == 38 || byte == 60 || byte == 62 || byte == 34 || byte == 39 || byte < 32 || byte == 0xEF
    }

    /// True when XML 1.0 allows `scalar` in a document (its `Char` production; surrogates are no scalars).
    public static func isAllowed(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x9, 0xA, 0xD: return true
        case 0..<0x20, 0xFFFE, 0xFFFF: return false
        default: return true
        }
    }
}
