#if canImport(Glibc)
import Glibc
#endif

/// How stackcollapse-perf.pl turns one `perf script` frame into folded frames, on bytes: offset stripping,
/// `[unknown]` to `[module]`, `->` inline splitting with `_[i]`, argument lists dropped, quotes dropped, Java's `L`
/// prefix dropped, `_[k]`/`_[j]` annotations. Where inferno fixed a Perl bug (KNOWN_DIVERGENCES.tsv), inferno's rule
/// is used: argument lists are cut with bracket depth, versioned vmlinux modules are kernel, jitdump modules are JIT.
struct PerfFrameRules {
    typealias Bytes = UnsafeBufferPointer<UInt8>

    /// `--addrs`: `[module <pc>]` for unknown symbols.
    var includeAddresses = false
    /// `--kernel`: `_[k]` on kernel frames.
    var annotateKernel = false
    /// `--jit`: `_[j]` on JIT frames.
    var annotateJIT = false
    /// `--inline`: `_[i]` on frames perf prints with the module `(inlined)`.
    var markInlined = false
    /// `--demangle`: repair partially demangled Rust symbols (inferno).
    var repairRust = false
    /// `--perl-compat`: Perl's rules where inferno fixed them (argument lists, kernel and JIT modules).
    var perlCompatible = false

    /// Appends the folded frames of one frame line, root-most first, each preceded by `;`, to `out`. `java` is true
    /// when the process name starts with `java`. Hot path: bulk appends only, no per-byte work on common names.
    func append(line: Bytes, fields: PerfLineSyntax.FrameFields, java: Bool, to out: inout [UInt8]) {
        var function = Bytes(rebasing: line[fields.function])
        let module = Bytes(rebasing: line[fields.module])
        // `s/\+0x[\da-f]+$//`
        var end = function.count
        while end > 0 && Self.isLowerHex(function[end - 1]) { end -= 1 }
        if end < function.count && end >= 3 && function[end - 1] == UInt8(ascii: "x")
            && function[end - 2] == UInt8(ascii: "0") && function[end - 3] == UInt8(ascii: "+")
        {
            function = Bytes(rebasing: function[0..<(end - 3)])
        }
        if function.first == UInt8(ascii: "(") { return }  // process names
        var annotation: StaticString? = nil
        if annotateKernel && Self.isKernel(module, perl: perlCompatible) {
            annotation = "_[k]"
        } else if annotateJIT && Self.isJIT(module, perl: perlCompatible) {
            annotation = "_[j]"
        } else if markInlined && Self.equals(module, "inlined") {
            annotation = "_[i]"
        }
        split(function, line: line, fields: fields, annotation: annotation, java: java, to: &out)
    }

    /// `split /\->/`, trailing empty pieces dropped, each piece tidied and annotated.
    private func split(_ function: Bytes, line: Bytes, fields: PerfLineSyntax.FrameFields, annotation: StaticString?,
                       java: Bool, to out: inout [UInt8]) {
        var pieces = function.count
        while pieces >= 2 && function[pieces - 1] == UInt8(ascii: ">") && function[pieces - 2] == UInt8(ascii: "-") {
            pieces -= 2
        }
        var start = 0
        var first = true
        while start < pieces {
            let rest = Bytes(rebasing: function[start..<pieces])
            let stop = Self.find("->", in: rest, from: 0).map { start + $0 } ?? pieces
            appendPiece(Bytes(rebasing: function[start..<stop]), first: first, line: line, fields: fields,
                        annotation: annotation, java: java, to: &out)
            first = false
            start = stop + 2
            if stop >= pieces { break }
        }
    }

    /// One piece of a frame: module fallback, tidying, annotation (`_[i]` after the first piece, else the module's).
    private func appendPiece(_ piece: Bytes, first: Bool, line: Bytes, fields: PerfLineSyntax.FrameFields,
                             annotation: StaticString?, java: Bool, to out: inout [UInt8]) {
        let module = Bytes(rebasing: line[fields.module])
        out.append(UInt8(ascii: ";"))
        let frameStart = out.count
        if Self.equals(piece, "[unknown]") {
            var name: [UInt8] = Array("unknown".utf8)
            if !Self.equals(module, "[unknown]") {
                var slash = module.count
                while slash > 0 && module[slash - 1] != UInt8(ascii: "/") { slash -= 1 }
                name = Array(module[slash...])
            }
            var fallback: [UInt8] = [UInt8(ascii: "[")] + name
            if includeAddresses {
                fallback += Array(" <".utf8) + Array(line[fields.pc]) + [UInt8(ascii: ">")]
            }
            fallback.append(UInt8(ascii: "]"))
            fallback.withUnsafeBufferPointer { Self.appendTidied($0, perl: perlCompatible, to: &out) }
        } else {
            Self.appendTidied(piece, perl: perlCompatible, to: &out)
        }
        // inferno repairs Rust names before tidying and keeps quotes; repairing after tidying gives the same names.
        if repairRust && RustSymbols.hasHash(out[frameStart...]) {
            let repaired = out[frameStart...].withUnsafeBufferPointer { RustSymbols.repair($0) } ?? []
            out.removeSubrange(frameStart...)
            out.append(contentsOf: repaired.lazy.map { $0 == 59 ? 58 : $0 })
        }
        if java && out.count > frameStart && out[frameStart] == UInt8(ascii: "L")
            && out[frameStart...].contains(UInt8(ascii: "/"))
        {
            out.remove(at: frameStart)
        }
        // Perl: "_[i]" and "_[j]" are not added twice; "_[k]" always is.
        let suffix: StaticString? = first ? annotation : "_[i]"
        if let suffix, suffix.utf8Start[2] == UInt8(ascii: "k") || !Self.contains(out[frameStart...], suffix) {
            out.append(contentsOf: UnsafeBufferPointer(start: suffix.utf8Start, count: suffix.utf8CodeUnitCount))
        }
    }

    /// Perl's tidy_generic: `;` to `:`, the argument list dropped (kept for Go methods `pkg.(*T).M`; cut at the
    /// first top-level `(` that is not `(anonymous namespace)`, as inferno does, or with `perl` at the first `(`
    /// that is not), quotes dropped.
    static func appendTidied(_ name: Bytes, perl: Bool, to out: inout [UInt8]) {
        let classes = byteClasses
        let count = name.count
        // Up to the first "(": bytes to fix, brackets.
        var firstParen = -1
        var bracketBefore = false
        var fix = false
        var i = 0
        while i < count {
            let byteClass = classes[Int(name[i])]
            if byteClass == 0 {
                i += 1
                continue
            }
            if byteClass == 1 {
                firstParen = i
                break
            }
            if byteClass == 2 { fix = true } else { bracketBefore = true }
            i += 1
        }
        var cut = count
        if firstParen >= 0 {
            if hasDotParen(name, from: firstParen) && hasGoMethod(name) {
                cut = count
            } else if perl {
                cut = perlArgumentListStart(name)
            } else if !bracketBefore && !(firstParen > 0 && name[firstParen - 1] == 46)
                && !startsWith(Bytes(rebasing: name[firstParen...]), "(anonymous namespace)")
            {
                cut = firstParen
            } else {
                cut = argumentListStart(name)
            }
            for j in firstParen..<cut where classes[Int(name[j])] == 2 {
                fix = true
                break
            }
        }
        let start = out.count
        out.append(contentsOf: Bytes(rebasing: name[0..<cut]))
        guard fix else { return }
        let kept = out.withUnsafeMutableBufferPointer { buffer -> Int in
            var kept = start
            for k in start..<buffer.count where buffer[k] != 34 && buffer[k] != 39 {
                buffer[kept] = buffer[k] == 59 ? 58 : buffer[k]
                kept += 1
            }
            return kept
        }
        out.removeLast(out.count - kept)
    }

    /// True when a `(` at or after `from` follows a `.` (memchr from one `(` to the next).
    static func hasDotParen(_ name: Bytes, from: Int) -> Bool {
        guard let base = name.baseAddress else { return false }
        var at = from
        while true {
            if at > 0 && base[at - 1] == 46 { return true }
            guard at + 1 < name.count, let next = memchr(base + at + 1, 40, name.count - at - 1) else { return false }
            at = next.assumingMemoryBound(to: UInt8.self) - UnsafeMutablePointer(mutating: base)
        }
    }

    /// For ``appendTidied(_:perl:to:)``: 1 for `(`, 2 for `;` `"` `'`, 3 for `<>[]{})`, 0 for every other byte.
    nonisolated(unsafe) static let byteClasses: UnsafePointer<UInt8> = {
        let table = UnsafeMutablePointer<UInt8>.allocate(capacity: 256)
        table.initialize(repeating: 0, count: 256)
        table[40] = 1
        for byte in [59, 34, 39] { table[byte] = 2 }
        for byte in [60, 62, 91, 93, 123, 125, 41] { table[byte] = 3 }
        return UnsafePointer(table)
    }()

    /// Perl's `m/\.\(.*\)\./`.
    static func hasGoMethod(_ name: Bytes) -> Bool {
        guard name.count >= 4 else { return false }
        var open = -1
        for i in 0..<(name.count - 1) where name[i] == 46 && name[i + 1] == 40 {
            open = i
            break
        }
        guard open >= 0 else { return false }
        var i = name.count - 2
        while i >= open + 2 {
            if name[i] == 41 && name[i + 1] == 46 { return true }
            i -= 1
        }
        return false
    }

    /// Where the argument list starts: the first `(` outside `<>`, `{}`, `[]` and `()` that does not follow a `.`
    /// and does not open `(anonymous namespace)`; the whole length when there is none.
    static func argumentListStart(_ name: Bytes) -> Int {
        var depth = 0
        for i in 0..<name.count {
            switch name[i] {
            case UInt8(ascii: "<"), UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: ">"), UInt8(ascii: "}"), UInt8(ascii: "]"), UInt8(ascii: ")"): depth -= 1
            case UInt8(ascii: "("):
                if depth == 0 && !(i > 0 && name[i - 1] == UInt8(ascii: "."))
                    && !startsWith(Bytes(rebasing: name[i...]), "(anonymous namespace)")
                {
                    return i
                }
                depth += 1
            default: break
            }
        }
        return name.count
    }

    /// Perl's `s/\((?!anonymous namespace\)).*//`: the first `(` that does not open `(anonymous namespace)`.
    static func perlArgumentListStart(_ name: Bytes) -> Int {
        for i in 0..<name.count where name[i] == UInt8(ascii: "(")
            && !startsWith(Bytes(rebasing: name[i...]), "(anonymous namespace)") { return i }
        return name.count
    }

    /// Perl: `m/(^\[|vmlinux$)/ && !~ /unknown/`; inferno (unless `perl`): kernel modules `*.ko` and versioned
    /// `vmlinux-5.4.14-...` too.
    static func isKernel(_ module: Bytes, perl: Bool) -> Bool {
        guard !contains(module, "unknown") else { return false }
        if module.first == UInt8(ascii: "[") || module.count >= 7 && startsWith(Bytes(rebasing: module[(module.count - 7)...]), "vmlinux") {
            return true
        }
        if perl { return false }
        if module.count >= 3 && startsWith(Bytes(rebasing: module[(module.count - 3)...]), ".ko") { return true }
        // The last "vmlinux", followed only by [A-Za-z0-9._-].
        let word = Array("vmlinux".utf8)
        var i = module.count - word.count
        while i >= 0 {
            if startsWith(Bytes(rebasing: module[i...]), "vmlinux") {
                return module[(i + word.count)...].allSatisfy { PerfLineSyntax.isWord($0) || $0 == 45 || $0 == 46 }
            }
            i -= 1
        }
        return false
    }

    /// Perl: `m:/tmp/perf-\d+\.map:`; inferno (unless `perl`): perf jitdump objects `.../jitted-PID-N.so` too.
    static func isJIT(_ module: Bytes, perl: Bool) -> Bool {
        var from = 0
        while let found = find("/tmp/perf-", in: module, from: from) {
            var i = found + 10
            from = found + 1
            let digits = i
            while i < module.count && PerfLineSyntax.isDigit(module[i]) { i += 1 }
            if i > digits && startsWith(Bytes(rebasing: module[i...]), ".map") { return true }
        }
        return !perl && contains(module, "/jitted-") && module.count >= 3 && startsWith(Bytes(rebasing: module[(module.count - 3)...]), ".so")
    }

    @inline(__always) static func isLowerHex(_ byte: UInt8) -> Bool { PerfLineSyntax.isDigit(byte) || byte &- 97 < 6 }

    static func equals(_ bytes: Bytes, _ text: StaticString) -> Bool {
        bytes.count == text.utf8CodeUnitCount && startsWith(bytes, text)
    }

    static func startsWith(_ bytes: Bytes, _ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard bytes.count >= count else { return false }
        let pointer = text.utf8Start
        for i in 0..<count where bytes[i] != pointer[i] { return false }
        return true
    }

    static func contains(_ bytes: Bytes, _ text: StaticString) -> Bool { find(text, in: bytes, from: 0) != nil }

    /// Where `text` first occurs in `bytes` at or after `from` (memchr for its first byte, then a compare).
    static func find(_ text: StaticString, in bytes: Bytes, from: Int) -> Int? {
        let count = text.utf8CodeUnitCount
        guard let base = bytes.baseAddress, count > 0 else { return nil }
        var at = from
        while at + count <= bytes.count,
              let hit = memchr(base + at, Int32(text.utf8Start[0]), bytes.count - count + 1 - at) {
            let index = hit.assumingMemoryBound(to: UInt8.self) - UnsafeMutablePointer(mutating: base)
            if memcmp(base + index, text.utf8Start, count) == 0 { return index }
            at = index + 1
        }
        return nil
    }

    static func contains(_ bytes: ArraySlice<UInt8>, _ text: StaticString) -> Bool {
        bytes.withUnsafeBufferPointer { contains($0, text) }
    }
}
