import StallFormat

/// Which frames are the app's own code, for the report's "app frames" (docs/REPORT.md).
///
/// A frame is app code when its image is an app image and its function is not a compiler or library helper:
/// - App images: the main executable and every shared library that is not a system or toolchain library. Not
///   app images: paths under `/lib/`, `/lib64/`, `/usr/lib/`, `/usr/lib64/`, `/usr/libexec/`, any path with a
///   `/lib/swift/` or `/lib/swift_static/` directory (the Swift toolchain's runtime), the vDSO, and files named
///   `libswift*`, `libdispatch*`, `libFoundation*`, `lib_Foundation*`, `libBlocksRuntime*`, `libicu*`,
///   `libXCTest*`, `libTesting*`, `libc.so*`, `libm.so*`, `libstdc++*`, `libgcc_s*`, `libunwind*`, `ld-linux*`,
///   `ld-*.so*` wherever they are. Frames outside every image are not app code.
/// - Not app functions even in an app image (by the full demangled name): PLT stubs (`@plt`), compiler helpers
///   (`outlined ...`, `reabstraction thunk ...`, `partial apply forwarder for reabstraction thunk ...`), and code
///   of the standard library specialized into the app (`Swift.`, `(extension in Swift):`, and specializations
///   `... of Swift.` / `... of (extension in Swift):`).
/// - Closures and protocol witnesses belong to what follows their last ` in `: a closure in
///   `Swift.MainActor.assumeIsolated` is library code, a closure in `chat_freeze` is app code.
/// - Entry points (`main`, `_start`, `$main`) count as app code for neither shares nor hints.
final class AppCodeRule {
    private let symbolizer: Symbolizer
    private let executable: String?
    private var imageCache: [String: Bool] = [:]
    private var addressCache: [UInt64: Bool] = [:]

    /// A rule for one capture's images. `symbolizer` must demangle to full names (not simplified).
    init(images: [ImageRecord], executable: String?) {
        var options = SymbolizerOptions()
        options.demangle = true
        symbolizer = Symbolizer(images: images, options: options)
        self.executable = executable
    }

    /// True when the frame at `address` (a return address unless it is the leaf) is app code.
    func isApp(_ address: UInt64, isReturnAddress: Bool) -> Bool {
        let key = isReturnAddress && address > 0 ? address - 1 : address
        if let known = addressCache[key] { return known }
        var result = false
        if let image = symbolizer.image(containing: address), isAppImage(image.path) {
            let name = symbolizer.name(for: address, isReturnAddress: isReturnAddress)
            result = !Self.isEntryPoint(name) && Self.isAppFunction(name)
        }
        addressCache[key] = result
        return result
    }

    /// True when the image at `path` holds app code.
    func isAppImage(_ path: String) -> Bool {
        if path == executable { return true }
        if let known = imageCache[path] { return known }
        let result = !Self.isSystemPath(path)
        imageCache[path] = result
        return result
    }

    /// True for system and toolchain libraries and the vDSO.
    static func isSystemPath(_ path: String) -> Bool {
        if path.hasPrefix("linux-vdso") || path.hasPrefix("linux-gate") || path == "[vdso]" { return true }
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

    /// True for entry points, which the report leaves out of app frames.
    static func isEntryPoint(_ name: String) -> Bool {
        name == "main" || name == "_start" || name.hasSuffix(".$main() -> ()") || name.hasSuffix("$main")
            || name.hasSuffix(".$main() async -> ()") || name.hasSuffix(".$main() throws -> ()")
    }

    /// False for helpers and standard library code, by the full demangled name.
    static func isAppFunction(_ name: String) -> Bool {
        // `__swift_instantiateConcreteTypeFromMangledName` and kin: runtime helpers the compiler emits into every
        // Swift binary (C-style names with the reserved `__swift_` prefix; no app function has it).
        if name.hasPrefix("__swift_") { return false }
        if isSanitizerRuntime(name) { return false }
        if name.hasSuffix("@plt") || name.hasPrefix("outlined ") || name.hasPrefix("reabstraction thunk")
            || name.hasPrefix("partial apply forwarder for") || name.hasPrefix("merged outlined")
        {
            return false
        }
        var subject = specializationSubject(name)
        if subject.hasPrefix("closure #") || subject.hasPrefix("implicit closure #")
            || subject.hasPrefix("protocol witness for ")
        {
            subject = enclosingContext(subject)
        }
        return !(subject == "Swift" || subject.hasPrefix("Swift.") || subject.hasPrefix("(extension in Swift):")
            || subject.hasPrefix("static Swift.") || subject.hasPrefix("static (extension in Swift):"))
    }

    /// True for the sanitizer runtimes (ASan, TSan, ...) that `-sanitize=` links into the executable: their
    /// thread start wrappers (`asan_thread_start`, `__tsan_thread_start_func`) and interceptors are not app code.
    static func isSanitizerRuntime(_ name: String) -> Bool {
        let runtimes = ["__asan", "__tsan", "__lsan", "__ubsan", "__msan", "__sanitizer", "__interceptor_"]
        if runtimes.contains(where: { name.hasPrefix($0) || name.hasPrefix("_" + $0) }) { return true }
        // C++ names of the runtimes' internals stay mangled (`_ZN6__asan...`, `_ZL17asan_thread_startPv`).
        return name.hasPrefix("_Z") && (runtimes.contains { name.contains($0) } || name.contains("asan_thread_start"))
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
