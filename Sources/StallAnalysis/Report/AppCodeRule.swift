import StallFormat

/// Which frames are the app's own code, for the report's "app frames" (docs/REPORT.md, "App code").
///
/// A frame is app code when its image is an app image, its function is not a compiler or library helper, and,
/// for Swift code, its module is one of the app's modules:
/// - App images: the main executable and every shared library that is not a system or toolchain library
///   (``isSystemPath(_:)``). Frames outside every image are not app code.
/// - Not app functions even in an app image (by the full demangled name): PLT stubs (`@plt`), compiler helpers
///   (`outlined ...`, `reabstraction thunk ...`, `partial apply forwarder for reabstraction thunk ...`), and code
///   of the standard library specialized into the app (`Swift.`, `(extension in Swift):`, and specializations
///   `... of Swift.` / `... of (extension in Swift):`).
/// - Closures and protocol witnesses belong to what follows their last ` in `: a closure in
///   `Swift.MainActor.assumeIsolated` is library code, a closure in `chat_freeze` is app code. A closure seen only
///   through its `partial apply forwarder` is judged as the closure.
/// - App modules: those given (`--app-module`), else the module of the executable's `$main` (an `@main` type),
///   else the module named after the executable (top-level code in `main.swift`) when the executable defines
///   symbols of it, else every module (``AppModules``). The toolchain's modules (``isToolchainModule(_:)``) are
///   never app code. Code without a Swift module (C) is judged by its image alone.
/// - Entry points (`main`, `_start`, `$main`) count as app code for neither shares nor hints.
final class AppCodeRule {
    /// What the rule found for one address.
    struct Frame {
        /// True when the frame is app code.
        var isApp: Bool
        /// The Swift module of a function in a non-system image (app code or a library module's); nil for C
        /// code, helpers, the toolchain's modules, entry points and system images.
        var module: String?
        /// The full demangled name.
        var name: String
        /// For a `partial apply forwarder for closure ...`: the closure's name.
        var forwarded: Substring?
    }

    private let symbolizer: Symbolizer
    private let executable: String?
    private let images: [ImageRecord]
    private let givenModules: [String]
    /// The app's modules once known (nil inside: every module counts).
    private var knownModules: (sorted: [String]?, set: Set<String>?)?
    private var imageCache: [String: Bool] = [:]
    private var addressCache: [UInt64: Frame] = [:]

    /// A rule for one capture's images. `appModules`: the modules that are the app; empty: those `stallprof
    /// symbolicate` recorded, else found from the executable's symbols when first needed
    /// (``AppModules/detect(executable:symbols:)``). Files are looked up as `lookup` says (its debug directories);
    /// names stay mangled whatever it says.
    init(capture: Capture, appModules: [String] = [], lookup: SymbolizerOptions = SymbolizerOptions()) {
        var options = SymbolizerOptions()
        (options.debugDirectories, options.systemDebugDirectory) = (lookup.debugDirectories, lookup.systemDebugDirectory)
        options.demangle = false  // the mangled name tells Swift code from C, and gives its module
        symbolizer = Symbolizer(
            images: capture.images, table: capture.symbols, symbolication: capture.symbolication, options: options)
        executable = capture.process?.executable
        images = capture.images
        givenModules = appModules.isEmpty ? capture.symbolication?.appModules ?? [] : appModules
    }

    /// The app's modules, sorted; nil when every module counts (none could be told apart).
    var appModules: [String]? { modules().sorted }

    private func modules() -> (sorted: [String]?, set: Set<String>?) {
        if let knownModules { return knownModules }
        var sorted: [String]? = nil
        if !givenModules.isEmpty {
            sorted = Array(Set(givenModules)).sorted()
        } else if let executable, let image = images.first(where: { $0.path == executable }) {
            sorted = AppModules.detect(executable: executable, symbols: symbolizer.symbols(ofImage: image))
        }
        knownModules = (sorted, sorted.map(Set.init))
        return knownModules!
    }

    /// The app flags and modules (``Frame/module``) of a stack captured leaf first, root first (the order of
    /// ``Symbolizer/rootFirstNames(leafFirst:)``). A closure forwarder whose callee is the closure itself keeps
    /// its name there and is a helper here.
    func judge(leafFirst frames: [UInt64]) -> (app: [Bool], modules: [String?]) {
        var app: [Bool] = [], modules: [String?] = []
        app.reserveCapacity(frames.count)
        modules.reserveCapacity(frames.count)
        for index in stride(from: frames.count - 1, through: 0, by: -1) {
            var found = frame(frames[index], isReturnAddress: index > 0)
            if let closure = found.forwarded, index > 0,
                frame(frames[index - 1], isReturnAddress: index - 1 > 0).name == closure
            {
                found.isApp = false
                found.module = nil
            }
            app.append(found.isApp)
            modules.append(found.module)
        }
        return (app, modules)
    }

    /// What the rule finds at `address` (a return address unless it is the leaf), judged alone (a closure
    /// forwarder as its closure), cached.
    func frame(_ address: UInt64, isReturnAddress: Bool) -> Frame {
        let key = isReturnAddress && address > 0 ? address - 1 : address
        if let known = addressCache[key] { return known }
        let symbol = symbolizer.name(for: address, isReturnAddress: isReturnAddress)
        let plt = symbol.hasSuffix("@plt")
        let bare = plt ? String(symbol.dropLast(4)) : symbol
        let name = SwiftDemangler.readable(bare) + (plt ? "@plt" : "")
        var result = Frame(isApp: false, module: nil, name: name, forwarded: Symbolizer.forwardedClosure(name))
        if let image = symbolizer.image(containing: address), isAppImage(image.path), !plt {
            let judged = result.forwarded.map(String.init) ?? name
            if !Self.isEntryPoint(name), Self.isAppFunction(judged) {
                let module = SwiftDemangler.isMangled(bare) ? Self.module(symbol: bare, demangled: judged) : nil
                if let module, Self.isToolchainModule(module) {
                    result.isApp = false
                } else {
                    result.module = module
                    result.isApp = module.map { modules().set?.contains($0) ?? true } ?? true
                }
            }
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

    /// True for entry points, which the report leaves out of app frames.
    static func isEntryPoint(_ name: String) -> Bool {
        name == "main" || name == "_start" || name.hasSuffix(".$main() -> ()") || name.hasSuffix("$main")
            || name.hasSuffix(".$main() async -> ()") || name.hasSuffix(".$main() throws -> ()")
            || name.hasSuffix(".$main() async throws -> ()")
    }

    /// Where, among the functions the compiler inlined at `address` (outermost first, as
    /// ``SourcePlace/inlined``), the innermost one is that is code of the app or of a library, not the toolchain's
    /// nor a helper (judged on its full demangled name: a short one has lost its module); nil when none is.
    func innermostOwnInlined(_ address: UInt64, isReturnAddress: Bool) -> Int? {
        let inlined = symbolizer.sourceFrames(for: address, isReturnAddress: isReturnAddress).dropFirst()
        return inlined.lastIndex { frame in
            let name = SwiftDemangler.readable(frame.function)
            guard !name.hasPrefix("["), Self.isAppFunction(name) else { return false }  // `[inlined]`: no name
            return !(Self.module(ofDemangled: name).map(Self.isToolchainModule) ?? false)
        }.map { $0 - 1 }
    }

    /// False for helpers and standard library code, by the full demangled name.
    static func isAppFunction(_ name: String) -> Bool {
        // `__swift_instantiateConcreteTypeFromMangledName` and kin: runtime helpers the compiler emits into every
        // Swift binary (C-style names with the reserved `__swift_` prefix; no app function has it).
        if name.hasPrefix("__swift_") { return false }
        if isSanitizerRuntime(name) { return false }
        // stallprof's own code in the app's executable: the capture's C (`stallcap_warm_thread`, run once on the
        // main thread by the watchdog's first ping) and the watchdog's Swift module.
        if name.hasPrefix("stallcap_") { return false }
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
        if subject.hasPrefix("StallProfiler.") || subject.hasPrefix("static StallProfiler.") { return false }
        return !(subject == "Swift" || subject.hasPrefix("Swift.") || subject.hasPrefix("(extension in Swift):")
            || subject.hasPrefix("static Swift.") || subject.hasPrefix("static (extension in Swift):"))
    }
}
