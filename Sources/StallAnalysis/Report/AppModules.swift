/// Which Swift modules of an executable are the app, when `--app-module` does not say (docs/REPORT.md, "App
/// code"): SwiftPM links the app's dependencies into the executable, and their modules are not the app.
enum AppModules {
    /// The app's modules, sorted, from the symbols `symbols` of the executable at `executable`:
    /// 1. the module of the Swift entry point of an `@main` type (`static MyApp.App.$main() -> ()`, mangled
    ///    `$s5MyApp0B0V5$mainyyFZ`, async or throwing alike);
    /// 2. else (top-level code, whose `main` is a C symbol) the module named after the executable's file, as
    ///    SwiftPM names a target's module (``moduleName(ofExecutable:)``: `chat-freeze` gives `chat_freeze`),
    ///    when the executable defines symbols of it;
    /// 3. else nil: every module counts as app code (a stripped executable, a module named otherwise).
    static func detect(executable: String, symbols: ELFSymbols?) -> [String]? {
        guard let symbols else { return nil }
        var entryModules = Set<String>()
        var modules = Set<String>()
        var previous: [UInt8] = []
        symbols.forEachDefinedSymbol { bytes, _ in
            // Only the `$s<length><module>` prefix is read; the next symbol usually shares it.
            guard let prefix = mangledPrefix(bytes) else { return }
            let isEntry = containsEntryPoint(bytes)
            if !isEntry, prefix.elementsEqual(previous) { return }
            guard let module = AppCodeRule.module(ofMangled: String(decoding: prefix, as: UTF8.self)) else { return }
            previous = Array(prefix)
            modules.insert(module)
            if isEntry { entryModules.insert(module) }
        }
        if !entryModules.isEmpty { return entryModules.sorted() }
        let named = moduleName(ofExecutable: executable)
        return modules.contains(named) ? [named] : nil
    }

    /// The module name SwiftPM gives the target of an executable at `path`: its file name with every character
    /// that cannot be in an identifier replaced by `_`, and `_` before a leading digit (`chat-freeze` gives
    /// `chat_freeze`).
    static func moduleName(ofExecutable path: String) -> String {
        let file = path.split(separator: "/").last.map(String.init) ?? path
        let name = String(file.map { $0 == "_" || $0.isLetter || $0.isNumber ? $0 : "_" })
        return name.first?.isNumber == true ? "_" + name : name
    }

    /// The bytes of a mangled Swift symbol up to the end of its module name (`$s5MyApp` of `$s5MyApp4ViewC...`,
    /// `_$s` alike); nil for other symbols.
    static func mangledPrefix(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        var at = bytes.first == UInt8(ascii: "_") ? 1 : 0
        guard bytes.count > at + 2, bytes[at] == UInt8(ascii: "$"),
            bytes[at + 1] == UInt8(ascii: "s") || bytes[at + 1] == UInt8(ascii: "e")
        else { return nil }
        at += 2
        var length = 0
        while at < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[at]), length < 10_000 {
            length = length * 10 + Int(bytes[at] - UInt8(ascii: "0"))
            at += 1
        }
        guard length > 0, at + length <= bytes.count else { return nil }
        return UnsafeRawBufferPointer(rebasing: bytes[0..<(at + length)])
    }

    /// True when a mangled name is (or is inside) an `@main` type's entry point, `5$mainyy` followed by `F`, `YaF`,
    /// `KF` or `YaKF` and `Z` (static).
    static func containsEntryPoint(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let marker = Array("5$mainyy".utf8)
        guard bytes.count >= marker.count + 2 else { return false }
        for start in 0...(bytes.count - marker.count) where bytes[start] == marker[0] {
            guard bytes[start..<(start + marker.count)].elementsEqual(marker) else { continue }
            let rest = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[(start + marker.count)...]), as: UTF8.self)
            if ["FZ", "YaFZ", "KFZ", "YaKFZ"].contains(where: { rest.hasPrefix($0) }) { return true }
        }
        return false
    }
}

/// Where samples without app code spend their time, by library module: a Swift module that is neither the app's
/// nor the system's or toolchain's (a SwiftPM dependency linked into the executable, a library of the app's). The
/// no-app-code hint names the heaviest (docs/REPORT.md, "Hints").
struct LibraryTally {
    /// A library module, its heaviest function and that function's weight.
    struct Heaviest: Equatable {
        /// The module, e.g. `ChatUI`.
        var module: String
        /// Its function on the stack in the most weight (ties: the outer frame, then the smaller name), a function
        /// rather than a closure (``LibraryTally/heaviest(named:)``).
        var function: String
        /// The weight of the samples with that function on the stack.
        var weight: Double
    }

    /// Weight per module, each sample counted once per module on its stack.
    private var modules: [String: Double] = [:]
    /// Per function (a name's number): its module, its weight (once per sample) and its depths summed.
    private var functions: [Int32: (module: String, weight: Double, depth: Int)] = [:]

    /// Adds a sample of `weight` without app code: `frames` root first, `modules[i]` the library module of frame
    /// `i` (``AppCodeRule/Frame/module``; nil: none).
    mutating func add(frames: [Int32], modules frameModules: [String?], weight: Double) {
        var seenModules = Set<String>(), seenFrames = Set<Int32>()
        for (depth, frame) in frames.enumerated() where depth < frameModules.count {
            guard let module = frameModules[depth] else { continue }
            if seenModules.insert(module).inserted { modules[module, default: 0] += weight }
            if seenFrames.insert(frame).inserted {
                let known = functions[frame] ?? (module, 0, 0)
                functions[frame] = (known.module, known.weight + weight, known.depth + depth)
            }
        }
    }

    /// The module with the most weight (ties: the smaller name) and its heaviest function, named by `name`; nil
    /// when no sample had a library module. A function beats closures and thunks (``ProfileBuilder/isGlue(_:)``)
    /// when it is on the stack in at least half the module's weight: the closure a run loop calls is not what
    /// loops.
    func heaviest(named name: (Int32) -> String) -> Heaviest? {
        guard let (module, moduleWeight) = modules.max(by: { ($0.value, $1.key) < ($1.value, $0.key) }) else {
            return nil
        }
        let candidates = functions.filter { $0.value.module == module }.map { (name: name($0.key), entry: $0.value) }
        let functions = candidates.filter { !ProfileBuilder.isGlue($0.name) && $0.entry.weight * 2 >= moduleWeight }
        let best = (functions.isEmpty ? candidates : functions).min { a, b in
            if a.entry.weight != b.entry.weight { return a.entry.weight > b.entry.weight }
            return a.entry.depth != b.entry.depth ? a.entry.depth < b.entry.depth : a.name < b.name
        }
        return best.map { Heaviest(module: module, function: $0.name, weight: $0.entry.weight) }
    }
}
