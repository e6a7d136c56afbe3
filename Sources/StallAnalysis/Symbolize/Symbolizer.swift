import StallFormat

/// Options of the offline symbolizer. Every field documents its default.
public struct SymbolizerOptions: Sendable {
    /// Demangle Swift names. Default: true.
    public var demangle = true
    /// Demangle Swift names to their simplified form (`static BusyWork.descend(_:until:)`: no module names, no
    /// argument types), when the toolchain's libswiftDemangle.so is found; full names otherwise. Default: false.
    public var simplifyNames = false
    /// Directories searched, in order, for an image whose file is missing, was rebuilt (its build-id differs
    /// from the capture's) or has no full symbol table: each as `DIR/.build-id/ab/cdef....debug`,
    /// `DIR/<name>.debug` and `DIR/<name>` (the layouts of gdb, Debian's `-dbgsym` packages and `objcopy
    /// --only-keep-debug`), then ``systemDebugDirectory``. A file found there is used only when its build-id is
    /// the capture's. Default: none (the CLI's `STALLPROF_DEBUG_DIRS`, then its `--debug-dir`s).
    public var debugDirectories: [String] = []
    /// The system's debug directory, searched after ``debugDirectories``; nil: not searched. Default:
    /// `/usr/lib/debug` (where Debian's `-dbgsym` packages install).
    public var systemDebugDirectory: String? = "/usr/lib/debug"
    /// How names read: `.short` as Xcode shows Swift frames (``ShortNames``). Default: `.full`.
    public var names = NameStyle.full
    /// Append `+0xOFFSET` to each resolved name. Default: false (flame graphs merge by function).
    public var showOffsets = false
    /// Append each frame's source line, `:Workloads.swift:66` (stackcollapse-perf's `--srcline` form), where its
    /// image has DWARF (``Symbolizer/sourceFrames(for:isReturnAddress:)``). Default: false (one frame per
    /// function).
    public var lines = false
    /// Give each function the compiler inlined a frame of its own, marked `_[i]` (stackcollapse-perf's), from
    /// DWARF. Default: false (an inlined function's time is its caller's).
    public var inlines = false

    /// Every directory searched for debug files, in order: ``debugDirectories``, then ``systemDebugDirectory``.
    var searchedDebugDirectories: [String] { debugDirectories + [systemDebugDirectory].compactMap { $0 } }

    /// Creates the default options.
    public init() {}
}

/// Resolves instruction addresses to function names offline, from a capture's image map and the ELF files it
/// names. It never uses `dladdr` on the capturing process: release builds do not export internal Swift
/// functions, but their `.symtab` has them. Results are cached per address.
public final class Symbolizer {
    /// Options in use.
    public let options: SymbolizerOptions
    private let images: [ImageRecord]
    private let contents: [ImageContentsRecord]
    /// What `stallprof symbolicate` resolved, by looked-up address: used before any file.
    let table: [UInt64: EmbeddedSymbol]
    /// The images the symbolication found no line information for.
    let tableWithoutLines: Set<String>
    private var files: [String: ELFSymbols?] = [:]
    /// Each image's own file, when a debug file stands in for it (``files``): its PLT stubs are named from it.
    private var ownFiles: [String: ELFSymbols?] = [:]
    private var cache: [UInt64: String] = [:]
    /// Debug files found for images (by image path), and what the source-line lookup keeps (Symbolizer+Lines.swift).
    private var debugFiles: [String: ELFSymbols?] = [:]
    var sourceCache: [UInt64: [SourceFrame]] = [:]
    var renderCache: [UInt64: (names: [String], full: [String], places: [String?])] = [:]
    var dwarfFiles: [String: DwarfLines?] = [:]
    var withoutLines = Set<String>()
    /// True once a line was looked up in a file's DWARF (not in ``table``).
    var readDwarf = false
    /// Problems found (a missing file, a build-id that no longer matches), once per image.
    public private(set) var warnings: [String] = []

    /// Creates a symbolizer for one capture's images; `contents` are images copied from memory (the vDSO), read
    /// in place of files; `table` what `stallprof symbolicate` resolved (``Capture/symbols``), used before any file,
    /// with `symbolication` saying which images had no lines.
    public init(
        images: [ImageRecord], contents: [ImageContentsRecord] = [], table: [UInt64: EmbeddedSymbol] = [:],
        symbolication: SymbolicationRecord? = nil, options: SymbolizerOptions = SymbolizerOptions()
    ) {
        self.images = images.sorted { $0.start < $1.start }
        self.contents = contents
        self.table = table
        tableWithoutLines = Set(symbolication?.sources.filter(\.lines.isEmpty).map(\.image) ?? [])
        self.options = options
    }

    /// Creates a symbolizer for `capture`'s images, image contents and embedded symbols.
    public convenience init(capture: Capture, options: SymbolizerOptions = SymbolizerOptions()) {
        self.init(
            images: capture.images, contents: capture.imageContents, table: capture.symbols,
            symbolication: capture.symbolication, options: options)
    }

    /// The image whose loaded range contains `address`.
    public func image(containing address: UInt64) -> ImageRecord? {
        var low = 0, high = images.count
        while low < high {
            let mid = (low + high) / 2
            if images[mid].start <= address { low = mid + 1 } else { high = mid }
        }
        guard low > 0, address < images[low - 1].end else { return nil }
        return images[low - 1]
    }

    /// The name of the function at `address`. For a return address (every frame but the leaf) the call
    /// instruction before it is looked up. Unresolvable addresses give `[image name]` or `[unknown]`.
    public func name(for address: UInt64, isReturnAddress: Bool) -> String {
        let key = isReturnAddress && address > 0 ? address - 1 : address
        if let known = cache[key] { return known }
        let result = resolve(key)
        cache[key] = result
        return result
    }

    /// Names for a stack captured leaf first, returned root first (the folded order). A closure whose only frame
    /// is its `partial apply forwarder` (the closure inlined into it) reads as the closure
    /// (``showForwardedClosures(_:offsets:)``).
    public func rootFirstNames(leafFirst frames: [UInt64]) -> [String] {
        if options.lines || options.inlines { return rootFirstNamesWithLines(leafFirst: frames) }
        var names: [String] = []
        names.reserveCapacity(frames.count)
        for index in stride(from: frames.count - 1, through: 0, by: -1) {
            names.append(name(for: frames[index], isReturnAddress: index > 0))
        }
        Self.showForwardedClosures(&names, offsets: options.showOffsets)
        return names
    }

    /// The closure a forwarder calls: `closure #1 () -> () in f` for `partial apply forwarder for closure #1 () ->
    /// () in f` (simplified: `partial apply for closure #1 in f`), and likewise for implicit closures; nil for every
    /// other name (`partial apply forwarder for reabstraction thunk ...` stays a helper).
    public static func forwardedClosure(_ name: String) -> Substring? {
        for prefix in ["partial apply forwarder for ", "partial apply for "] where name.hasPrefix(prefix) {
            let rest = name.dropFirst(prefix.count)
            return rest.hasPrefix("closure #") || rest.hasPrefix("implicit closure #") ? rest : nil
        }
        return nil
    }

    /// Shows each closure forwarder among `names` (root first) as its closure, unless the next frame toward the
    /// leaf is that closure itself: then the forwarder is a helper with a frame of its own and keeps its name (two
    /// frames of one closure would read as recursion). `offsets`: names end with `+0xOFFSET`, which is ignored
    /// when the two are compared.
    public static func showForwardedClosures(_ names: inout [String], offsets: Bool = false) {
        for index in names.indices {
            guard let closure = forwardedClosure(names[index]) else { continue }
            if index + 1 < names.count,
                withoutOffset(Substring(names[index + 1]), offsets) == withoutOffset(closure, offsets)
            {
                continue
            }
            names[index] = String(closure)
        }
    }

    /// `name` without its `+0xOFFSET` suffix when `offsets` says names have one.
    private static func withoutOffset(_ name: Substring, _ offsets: Bool) -> Substring {
        guard offsets, let plus = name.lastIndex(of: "+"), name[plus...].hasPrefix("+0x") else { return name }
        return name[..<plus]
    }

    /// The symbols of `image`'s file (a debug file's when it has only `.dynsym`); nil when the file cannot be read
    /// or its build-id no longer matches the capture's.
    func symbols(ofImage image: ImageRecord) -> ELFSymbols? { symbols(for: image) }

    /// True for the vDSO's image path, as the watchdog (`linux-vdso.so.1`, `linux-gate.so.1`) or perf (`[vdso]`)
    /// names it: no file on disk.
    static func isVDSO(_ path: String) -> Bool {
        path.hasPrefix("linux-vdso") || path.hasPrefix("linux-gate") || path == "[vdso]"
    }

    private func resolve(_ address: UInt64) -> String {
        guard let image = image(containing: address) else { return "[unknown]" }
        // The vDSO is no file: its symbols come from the copy in the capture; without one, perf's name.
        let vdso = Self.isVDSO(image.path)
        let basename = vdso ? "vdso" : image.path.split(separator: "/").last.map(String.init) ?? image.path
        guard let (symbol, offset, isPLT) = symbol(containing: address, in: image) else { return "[\(basename)]" }
        var name = symbol
        if options.demangle {
            name = (options.simplifyNames ? SwiftDemangler.simplified(symbol) : nil) ?? SwiftDemangler.symbolName(symbol)
        }
        if options.demangle, options.names == .short { name = ShortNames.short(name) }
        if isPLT { name += "@plt" }
        if options.showOffsets { name += "+0x" + String(offset, radix: 16) }
        return name
    }

    /// The symbol containing `address` (already the looked-up one) in `image`: the embedded table's entry when it
    /// has one, else the image file's (or its debug file's) symbol.
    func symbol(containing address: UInt64, in image: ImageRecord) -> (name: String, offset: UInt64, isPLT: Bool)? {
        if let entry = table[address] { return entry.symbol.map { ($0, entry.offset, entry.isPLT) } }
        let offset = address &- image.loadBias
        if let found = symbols(for: image)?.symbol(containing: offset) { return found }
        // A debug file holds no PLT (objcopy leaves it empty): a stub is named from the image's own file.
        if let own = ownFiles[image.path], let own, own !== files[image.path] ?? nil, own.pltRange.contains(offset) {
            return own.symbol(containing: offset)
        }
        return nil
    }

    private func symbols(for image: ImageRecord) -> ELFSymbols? {
        if let loaded = files[image.path] { return loaded }
        if let copy = contents.first(where: { image.start <= $0.address && $0.address < image.end }) {
            var elf = ELFSymbols(bytes: copy.bytes, path: image.path)
            if let file = elf, !image.buildID.isEmpty, file.buildID != image.buildID { elf = nil }  // not this image's
            files[image.path] = elf
            return elf
        }
        if Self.isVDSO(image.path) {
            files[image.path] = .some(nil)  // no file to read, and no warning: perf's `[vdso]`
            return nil
        }
        var elf = ELFSymbols(path: image.path)
        var problem: String? = nil
        if elf == nil {
            problem = "cannot read the file"
        } else if let file = elf, !image.buildID.isEmpty, !file.buildID.isEmpty, file.buildID != image.buildID {
            problem = "build-id differs from the capture's (the file was rebuilt)"
            elf = nil
        }
        ownFiles[image.path] = .some(elf)
        if elf?.hasFullSymbolTable != true, let debug = debugFile(for: image) {
            elf = debug
        } else if let problem {
            let directories = options.searchedDebugDirectories
            let searched = directories.isEmpty ? "" : " in " + directories.joined(separator: ", ")
            let debug = image.buildID.count > 1 ? ", and no debug file with its build-id was found\(searched)" : ""
            warnings.append("\(image.path): \(problem)\(debug); its frames stay unresolved")
        }
        files[image.path] = elf
        return elf
    }

    /// A file of the debug directories with `image`'s build-id (``SymbolizerOptions/debugDirectories``), first
    /// found; nil when the image has no build-id or none matches. A file found by name whose build-id differs is
    /// never used: a warning names it.
    func debugFile(for image: ImageRecord) -> ELFSymbols? {
        if let known = debugFiles[image.path] { return known }
        let found = findDebugFile(for: image)
        debugFiles[image.path] = .some(found)
        return found
    }

    private func findDebugFile(for image: ImageRecord) -> ELFSymbols? {
        guard image.buildID.count > 1 else { return nil }
        let hex = image.buildIDHex
        let name = image.path.split(separator: "/").last.map(String.init) ?? image.path
        for directory in options.searchedDebugDirectories {
            let byID = "\(directory)/.build-id/\(hex.prefix(2))/\(hex.dropFirst(2)).debug"
            for path in [byID, "\(directory)/\(name).debug", "\(directory)/\(name)"] where path != image.path {
                guard let file = ELFSymbols(path: path) else { continue }
                guard file.buildID == image.buildID else {
                    warnings.append("\(path): build-id differs from that of \(image.path) in the capture; not used")
                    continue
                }
                return file
            }
        }
        return nil
    }
}
