extension StallCaptureImporter.Options {
    /// The ``window`` that `text` names: `FROM..TO` (or `FROM-TO`) in milliseconds after each episode's start,
    /// both ends included; an empty `FROM` is 0, an empty `TO` the episode's end. Nil when `text` is not such a
    /// window (not two non-negative numbers, or `TO` before `FROM`).
    public static func window(milliseconds text: String) -> ClosedRange<UInt64>? {
        guard let (fromText, toText) = split(text) else { return nil }
        guard let from = fromText.isEmpty ? 0 : Double(fromText),
            let to = toText.isEmpty ? Double.infinity : Double(toText), from >= 0, to >= from, !from.isInfinite
        else { return nil }
        let nanoseconds = { (ms: Double) -> UInt64 in
            ms.isInfinite || ms * 1e6 >= Double(UInt64.max) ? UInt64.max : UInt64(ms * 1e6)
        }
        return nanoseconds(from)...nanoseconds(to)
    }

    /// `text` cut at `..`, or else at a `-` that is not a number's exponent sign.
    private static func split(_ text: String) -> (Substring, Substring)? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        if let dots = parts.indices.dropLast().first(where: { parts[$0 + 1].isEmpty && $0 + 2 < parts.count }) {
            // FROM..TO: the numbers themselves may hold one '.' each.
            let from = parts[..<(dots + 1)].joined(separator: "."), to = parts[(dots + 2)...].joined(separator: ".")
            guard !to.contains("..") else { return nil }
            return (Substring(from), Substring(to))
        }
        var previous: Character? = nil
        for index in text.indices {
            if text[index] == "-", previous != "e", previous != "E" {
                return (text[..<index], text[text.index(after: index)...])
            }
            previous = text[index]
        }
        return nil
    }
}
