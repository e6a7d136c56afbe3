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
    /// when the process name starts with `java`.
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
        split(function, line: line, fields: fields, module: module, java: java, to: &out)
    }

    /// `split /\->/`, trailing empty pieces dropped, each piece tidied and annotated.
    private func split(_ function: Bytes, line: Bytes, fields: PerfLineSyntax.FrameFields, module: Bytes, java: Bool,
                       to out: inout [UInt8]) {
        var pieces = function.count
        while pieces >= 2 && function[pieces - 1] == UInt8(ascii: ">") && function[pieces - 2] == UInt8(ascii: "-") {
            pieces -= 2
        }
        var start = 0
        var first = true
        while start < pieces || (first && pieces > 0) {
            var stop = start
            while stop < pieces && !(function[stop] == UInt8(ascii: "-") && stop + 1 < pieces
                && function[stop + 1] == UInt8(ascii: ">")) { stop += 1 }
            appendPiece(Bytes(rebasing: function[start..<stop]), first: first, line: line, fields: fields,
                        module: module, java: java, to: &out)
            first = false
            start = stop + 2
            if stop >= pieces { break }
        }
    }

    /// One piece of a frame: module fallback, tidying, annotation.
    private func appendPiece(_ piece: Bytes, first: Bool, line: Bytes, fields: PerfLineSyntax.FrameFields,
                             module: Bytes, java: Bool, to out: inout [UInt8]) {
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
        if !first {
            if !Self.contains(out[frameStart...], "_[i]") { out.append(contentsOf: "_[i]".utf8) }
        } else if annotateKernel && Self.isKernel(module, perl: perlCompatible) {
            out.append(contentsOf: "_[k]".utf8)
        } else if annotateJIT && Self.isJIT(module, perl: perlCompatible) {
            if !Self.contains(out[frameStart...], "_[j]") { out.append(contentsOf: "_[j]".utf8) }
        } else if markInlined && Self.equals(module, "inlined") && !Self.contains(out[frameStart...], "_[i]") {
            out.append(contentsOf: "_[i]".utf8)
        }
    }

    /// Perl's tidy_generic: `;` to `:`, the argument list dropped (kept for Go methods `pkg.(*T).M`; cut at the
    /// first top-level `(` that is not `(anonymous namespace)`, as inferno does, or with `perl` at the first `(`
    /// that is not), quotes dropped.
    static func appendTidied(_ name: Bytes, perl: Bool, to out: inout [UInt8]) {
        var special = false
        for byte in name where byte == 59 || byte == 40 || byte == 34 || byte == 39 {
            special = true
            break
        }
        guard special else {
            out.append(contentsOf: name)
            return
        }
        let cut = hasGoMethod(name) ? name.count : perl ? perlArgumentListStart(name) : argumentListStart(name)
        for byte in name[0..<cut] where byte != 34 && byte != 39 {
            out.append(byte == 59 ? 58 : byte)
        }
    }

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
        guard !contains(module[...], "unknown") else { return false }
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
        let prefix = Array("/tmp/perf-".utf8)
        if module.count > prefix.count {
            for start in 0...(module.count - prefix.count) where startsWith(Bytes(rebasing: module[start...]), "/tmp/perf-") {
                var i = start + prefix.count
                let digits = i
                while i < module.count && PerfLineSyntax.isDigit(module[i]) { i += 1 }
                if i > digits && startsWith(Bytes(rebasing: module[i...]), ".map") { return true }
            }
        }
        return !perl && contains(module[...], "/jitted-") && module.count >= 3 && startsWith(Bytes(rebasing: module[(module.count - 3)...]), ".so")
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

    static func contains<C: Collection>(_ bytes: C, _ text: StaticString) -> Bool where C.Element == UInt8 {
        let needle = UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
        guard bytes.count >= needle.count else { return false }
        var index = bytes.startIndex
        var remaining = bytes.count
        while remaining >= needle.count {
            if bytes[index] == needle[0] && zip(bytes[index...], needle).allSatisfy({ $0 == $1 }) { return true }
            bytes.formIndex(after: &index)
            remaining -= 1
        }
        return false
    }
}
