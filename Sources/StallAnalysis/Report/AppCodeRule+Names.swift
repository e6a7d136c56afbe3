/// What a path or a name says about its code: system libraries, sanitizer runtimes, the function a closure or a
/// specialization belongs to, and the Swift module of a symbol.
extension AppCodeRule {
    /// True for system and toolchain libraries and the vDSO.
    static func isSystemPath(_ path: String) -> Bool {
        if Symbolizer.isVDSO(path) { return true }
        for prefix in ["/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/libexec/"] where path.hasPrefix(prefix) {
            return true
        }
        if path.contains("/lib/swift/") || path.contains("/lib/swift_static/") { return true }
        let name = path.split(separator: "/").last.map(String.init) ?? path
        let systemNames = [
            "libswift", "libdispatch", "libFoundation", "lib_Foundation", "libBlocksRuntime", "libicu", "libXCTest",
            "libTesting", "libc.so", "libm.so", "libstdc++", "libgcc_s", "libunwind", "ld-linux", "ld-",
        ]
        return systemNames.contains { name.hasPrefix($0) }
    }

    /// True for the sanitizer runtimes (ASan, TSan, ...) that `-sanitize=` links into the executable: their
    /// thread start wrappers (`asan_thread_start`, `__tsan_thread_start_func`) and interceptors are not app code.
    static func isSanitizerRuntime(_ name: String) -> Bool {
        let runtimes = ["__asan", "__tsan", "__lsan", "__ubsan", "__msan", "__sanitizer", "__interceptor_"]
        if runtimes.contains(where: { name.hasPrefix($0) || name.hasPrefix("_" + $0) }) { return true }
        // C++ names of the runtimes' internals stay mangled (`_ZN6__asan...`, `_ZL17asan_thread_startPv`), and the
        // common interceptors' helpers have no namespace (`_Z23MemcmpInterceptorCommonPvPFiPKvS1_mES1_S1_m`).
        return name.hasPrefix("_Z")
            && (runtimes.contains { name.contains($0) } || name.contains("asan_thread_start")
                || name.contains("InterceptorCommon"))
    }

    /// The Swift toolchain's own modules (the standard library, Foundation, Dispatch, the test libraries...): never
    /// app code nor a library module of the app's, even when linked into the executable (`-static-stdlib`).
    static func isToolchainModule(_ module: String) -> Bool {
        toolchainModules.contains(module) || module.hasPrefix("_Foundation") || module.hasPrefix("Foundation")
    }

    private static let toolchainModules: Set<String> = [
        "Swift", "_Concurrency", "_StringProcessing", "_RegexParser", "RegexBuilder", "Dispatch", "XCTest", "Testing",
        "Synchronization", "Distributed", "Observation", "Cxx", "CxxStdlib", "SwiftOnoneSupport", "_Differentiation",
        "Glibc", "SwiftGlibc", "Musl", "_Volatile", "_Builtin_float", "__C",
    ]

    /// The Swift module of the function named `demangled`, whose symbol is `symbol` (a mangled Swift name): read
    /// from the demangled name (``module(ofDemangled:)``), else from the mangled prefix (``module(ofMangled:)``).
    static func module(symbol: String, demangled: String) -> String? {
        (demangled == symbol ? nil : module(ofDemangled: demangled)) ?? module(ofMangled: symbol)
    }

    /// The module a demangled Swift name belongs to: `MyApp` for `MyApp.View.pass() -> ()`, `static MyApp.f()`,
    /// `closure #1 () -> () in MyApp.f()`, `generic specialization <Swift.Int> of MyApp.f<A>(A) -> ()`, the
    /// witness `protocol witness for Swift.Sequence.makeIterator() ... in conformance MyApp.Foo : Swift.Sequence in
    /// MyApp`, `(extension in MyApp):Swift.Array.foo() -> ()`, `dispatch thunk of MyApp.P.f()` and the partial
    /// functions of async code; nil when no module leads the name.
    static func module(ofDemangled name: String) -> String? {
        var subject = Substring(name)
        var inContext = false  // what follows a closure's ` in `: may be a module alone (`in chat_freeze`)
        for _ in 0..<8 {
            let before = subject
            subject = specializationSubject(String(subject))
            for prefix in ["static ", "dispatch thunk of ", "partial apply forwarder for ", "partial apply for ",
                           "async function pointer to ", "method descriptor for "] where subject.hasPrefix(prefix) {
                subject = subject.dropFirst(prefix.count)
            }
            // `(1) suspend resume partial function for MyApp.f() async -> ()`, `(2) await resume ...`.
            if subject.hasPrefix("("), let end = subject.firstRange(of: " partial function for "),
                !subject[..<end.lowerBound].contains(where: { $0 == "<" || $0 == "." })
            {
                subject = subject[end.upperBound...]
            }
            if subject.hasPrefix("closure #") || subject.hasPrefix("implicit closure #")
                || subject.hasPrefix("protocol witness for ")
            {
                subject = enclosingContext(subject)
                inContext = true
            }
            if subject == before { break }
        }
        if subject.hasPrefix("(extension in "), let close = subject.firstRange(of: "):") {
            subject = subject[subject.index(subject.startIndex, offsetBy: "(extension in ".count)..<close.lowerBound]
            return isIdentifier(subject) ? String(subject) : nil
        }
        let head = subject.prefix { $0 != "." }
        return isIdentifier(head) && (head.count < subject.count || inContext) ? String(head) : nil
    }

    /// The module of a mangled Swift symbol (`$s5MyApp4ViewC4passyyF` gives `MyApp`; `$ss...` and `$sS...`
    /// standard library names give `Swift`, `$sSo`/`$sSC` imported C names `__C`); nil for other names.
    static func module(ofMangled symbol: String) -> String? {
        var rest = Substring(symbol)
        if rest.hasPrefix("_") { rest = rest.dropFirst() }
        guard rest.hasPrefix("$s") || rest.hasPrefix("$e") else { return nil }
        rest = rest.dropFirst(2)
        if rest.hasPrefix("So") || rest.hasPrefix("SC") { return "__C" }
        if rest.hasPrefix("s") || rest.hasPrefix("S") { return "Swift" }
        let digits = rest.prefix { $0.isASCII && $0.isNumber }
        guard !digits.hasPrefix("0"), let length = Int(digits), length > 0 else { return nil }
        let name = rest.dropFirst(digits.count).prefix(length)
        return name.count == length && isIdentifier(name) ? String(name) : nil
    }

    /// True for a non-empty Swift identifier (letters, digits, `_`; not led by a digit).
    static func isIdentifier(_ text: Substring) -> Bool {
        guard let first = text.first, !first.isNumber else { return false }
        return text.allSatisfy { $0 == "_" || $0.isLetter || $0.isNumber }
    }

    /// What follows the last ` in ` outside brackets: the function or module a closure or witness belongs to.
    static func enclosingContext(_ name: Substring) -> Substring {
        var depth = 0, found: Substring.Index? = nil, previous: Character = " "
        var index = name.startIndex
        while index < name.endIndex {
            let character = name[index]
            if character == "(" || character == "<" || character == "[" { depth += 1 }
            if character == ")" || character == "]" || (character == ">" && previous != "-") { depth -= 1 }
            if depth == 0, name[index...].hasPrefix(" in ") { found = name.index(index, offsetBy: 4) }
            previous = character
            index = name.index(after: index)
        }
        return found.map { name[$0...] } ?? name
    }

    /// The function a specialization specializes (`generic specialization <Int> of Swift.f()` gives
    /// `Swift.f()`); the name itself otherwise.
    static func specializationSubject(_ name: String) -> Substring {
        var rest = Substring(name)
        while rest.contains("specialization <") || rest.hasPrefix("merged ") {
            if rest.hasPrefix("merged ") {
                rest = rest.dropFirst("merged ".count)
                continue
            }
            guard let open = rest.firstRange(of: "specialization <") else { break }
            var depth = 0, index = rest.index(before: open.upperBound)
            var closed: String.Index? = nil
            while index < rest.endIndex {
                if rest[index] == "<" { depth += 1 }
                if rest[index] == ">" && !(index > rest.startIndex && rest[rest.index(before: index)] == "-") {
                    depth -= 1
                    if depth == 0 { closed = index; break }
                }
                index = rest.index(after: index)
            }
            guard let closed, rest[rest.index(after: closed)...].hasPrefix(" of ") else { break }
            rest = rest[rest.index(closed, offsetBy: 5)...]
        }
        return rest
    }
}
