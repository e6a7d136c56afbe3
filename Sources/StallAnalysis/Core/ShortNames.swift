/// How function names read: in full, as the demangler writes them, or short, the way Xcode and Instruments show
/// Swift frames (`--names`, docs/FOLD.md "Short names").
public enum NameStyle: String, Sendable, CaseIterable {
    /// As demangled: `static StallSamples.BusyWork.burn(until: Swift.UInt64) -> Swift.UInt64`.
    case full
    /// `BusyWork.burn(until:)`: ``ShortNames/short(_:)``.
    case short
}

/// Short Swift names, made from demangled ones by text rules, so they apply to every input (captures, perf,
/// `sample`, speedscope): a specialization's wrapper, `static`, the module prefix, argument and return types, a
/// closure's signature, an accessor's type, a private name's discriminator and a witness's conformance go. Names
/// that are not demangled Swift (C, `[unknown]`, already short) are left as they are.
public enum ShortNames {
    /// `name` short: `function signature specialization <Arg[1] = Dead> of static StallSamples.BusyWork.burn(until:
    /// Swift.UInt64) -> Swift.UInt64` reads `BusyWork.burn(until:)`; `closure #1 @Swift.MainActor () -> () in
    /// cell_height.HostingView.setNeedsLayout() -> ()` reads `closure #1 in HostingView.setNeedsLayout()`. A
    /// stackcollapse annotation (`_[i]`, `_[k]`) or `@plt` at the end stays.
    public static func short(_ name: String) -> String {
        if let location = lineSuffix(name) { return short(String(name.dropLast(location.count))) + location }
        for suffix in ["_[i]", "_[k]", "_[j]", "@plt"] where name.hasSuffix(suffix) && name.count > suffix.count {
            return short(String(name.dropLast(suffix.count))) + suffix
        }
        // macOS `sample`'s `module`` prefix stays in front.
        if let tick = name.firstIndex(of: "`") { return String(name[...tick]) + short(String(name[name.index(after: tick)...])) }
        guard isSwift(name) else { return name }
        return shorten(Substring(ReportFormat.withoutDiscriminators(name)))
    }

    /// `--lines`' `:Workloads.swift:66` at the end of `name` (a file name with an extension, a line number); nil
    /// when it has none.
    static func lineSuffix(_ name: String) -> Substring? {
        let digits = name.reversed().prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, name.dropLast(digits.count).hasSuffix(":") else { return nil }
        let beforeLine = name.dropLast(digits.count + 1)
        let file = beforeLine.reversed().prefix { !":; ()<>".contains($0) }
        guard file.contains("."), file.first != ".", beforeLine.dropLast(file.count).hasSuffix(":"),
              beforeLine.count > file.count + 1 else { return nil }
        return name.suffix(digits.count + 1 + file.count + 1)
    }

    /// True for a demangled Swift name: one with a type signature (` -> `, an accessor's ` : `) or a Swift-only
    /// form (a closure, a specialization, a witness, a thunk).
    static func isSwift(_ name: String) -> Bool {
        let forms = ["closure #", "implicit closure #", "specialized ", "generic specialization <",
                     "function signature specialization <", "protocol witness for ", "reabstraction thunk",
                     "thunk for ", "partial apply ", "merged "]
        if name.contains(" -> ") || forms.contains(where: { name.hasPrefix($0) || name.hasPrefix("@objc " + $0) }) { return true }
        // A property or accessor: `Swift.Array.count.getter : Swift.Int`.
        guard let colon = name.firstRange(of: " : ") else { return false }
        let path = name[..<colon.lowerBound]
        return path.contains(".") && !path.contains(" ")
    }

    private static let wrappers = ["specialized ", "merged ", "static ", "dynamic ", "@objc ", "@nonobjc "]
    private static let kept = ["partial apply forwarder for ", "partial apply for ", "outlined copy of ",
                               "outlined consume of ", "type metadata accessor for ", "variable initialization expression of "]

    private static func shorten(_ text: Substring) -> String {
        var text = text
        // Wrappers that say how the function was compiled, not which it is.
        var changed = true
        while changed {
            changed = false
            for prefix in ["generic specialization <", "function signature specialization <"] where text.hasPrefix(prefix) {
                guard let close = matching(text, from: text.index(text.startIndex, offsetBy: prefix.count - 1)),
                      text[close...].hasPrefix("> of ") else { break }
                text = text[text.index(close, offsetBy: 5)...]
                changed = true
            }
            for prefix in wrappers where text.hasPrefix(prefix) {
                text = text.dropFirst(prefix.count)
                changed = true
            }
        }
        // Thunks read as Instruments shows them, whole: their signature is what tells them apart.
        if text.hasPrefix("reabstraction thunk") || text.hasPrefix("thunk for ") { return String(text) }
        if text.hasPrefix("protocol witness for ") {
            let rest = text.dropFirst("protocol witness for ".count)
            let end = topLevel(rest, " in conformance ") ?? rest.endIndex
            return "protocol witness for " + shorten(rest[..<end])
        }
        for prefix in kept where text.hasPrefix(prefix) { return prefix + shorten(text.dropFirst(prefix.count)) }
        for prefix in ["closure #", "implicit closure #"] where text.hasPrefix(prefix) {
            // `closure #1 <signature> in <where>`: the signature goes.
            let number = text.dropFirst(prefix.count).prefix { $0.isNumber }
            let after = text[text.index(text.startIndex, offsetBy: prefix.count + number.count)...]
            guard let within = topLevel(after, " in ") else { return String(text) }
            return prefix + number + " in " + shorten(after[after.index(within, offsetBy: 4)...])
        }
        if text.hasPrefix("(extension in "), let close = text.firstIndex(of: ")"), text[close...].hasPrefix("):") {
            text = text[text.index(close, offsetBy: 2)...]
        }
        // The function: its qualified path, then its arguments; the return type, or an accessor's type, goes.
        let signature = [topLevel(text, " -> "), topLevel(text, " : ")].compactMap { $0 }.min()
        // Without a signature the name is short already (or no Swift function's): it stays.
        guard let end = signature else { return String(text) }
        text = text[..<end]
        var path = Substring(text), arguments: Substring? = nil
        if text.hasSuffix(")"), let open = openingOfLast(text) {
            path = text[..<open]
            arguments = text[text.index(after: open)..<text.index(before: text.endIndex)]
        }
        var components = split(path, by: ".").map(withoutGenerics)
        if components.count > 1 { components.removeFirst() }  // the module
        var result = components.joined(separator: ".")
        if let arguments { result += "(" + labels(arguments) + ")" }
        return result
    }

    /// `until: Swift.UInt64, _: Swift.Int` reads `until:_:`; an argument without a label (`Swift.Int`) `_:`.
    private static func labels(_ arguments: Substring) -> String {
        guard !arguments.isEmpty else { return "" }
        return split(arguments, by: ", ").map { argument in
            guard let colon = topLevel(argument, ": ") else { return "_:" }
            let label = argument[..<colon]
            return label.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" } ? label + ":" : "_:"
        }.joined()
    }

    /// `Array<chat_freeze.Message>` reads `Array`.
    private static func withoutGenerics(_ component: Substring) -> String {
        guard let open = component.firstIndex(of: "<"), component.last == ">" else { return String(component) }
        return String(component[..<open])
    }

    /// The parts of `text` between top-level occurrences of `separator` (outside (), <>, []).
    private static func split(_ text: Substring, by separator: String) -> [Substring] {
        var parts: [Substring] = [], rest = text
        while let at = topLevel(rest, separator) {
            parts.append(rest[..<at])
            rest = rest[rest.index(at, offsetBy: separator.count)...]
        }
        return parts + [rest]
    }

    /// The first top-level (outside (), <> and [], an arrow's `>` not closing) occurrence of `needle` in `text`.
    private static func topLevel(_ text: Substring, _ needle: String) -> Substring.Index? {
        var depth = 0, index = text.startIndex, previous: Character = " "
        while index < text.endIndex {
            let character = text[index]
            if depth == 0, text[index...].hasPrefix(needle) { return index }
            if "(<[".contains(character) { depth += 1 }
            if ")]".contains(character) || (character == ">" && previous != "-") { depth = max(0, depth - 1) }
            previous = character
            index = text.index(after: index)
        }
        return nil
    }

    /// The `>` or `)` closing the bracket at `open`; nil when it is never closed.
    private static func matching(_ text: Substring, from open: Substring.Index) -> Substring.Index? {
        var depth = 0, index = open, previous: Character = " "
        while index < text.endIndex {
            let character = text[index]
            if "(<[".contains(character) { depth += 1 }
            if ")]".contains(character) || (character == ">" && previous != "-") {
                depth -= 1
                if depth == 0 { return index }
            }
            previous = character
            index = text.index(after: index)
        }
        return nil
    }

    /// The `(` that the final `)` of `text` closes.
    private static func openingOfLast(_ text: Substring) -> Substring.Index? {
        var depth = 0, index = text.index(before: text.endIndex)
        while true {
            let character = text[index]
            if character == ")" { depth += 1 }
            if character == "(" {
                depth -= 1
                if depth == 0 { return index }
            }
            if index == text.startIndex { return nil }
            index = text.index(before: index)
        }
    }
}
