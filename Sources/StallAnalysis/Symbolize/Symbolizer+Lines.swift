#if canImport(Glibc)
import Glibc
#endif
import CStallDwarf
import StallFormat

extension Symbolizer {
    /// The frames at `address`, root first: the function whose machine code it is (named as ``name(for:
    /// isReturnAddress:)`` names it), then each function inlined into it, out to the innermost, the code at the
    /// address; each with its file and line where the image's DWARF has them (its file, else a debug file found by
    /// build-id, ``SymbolizerOptions/debugDirectories``). Without DWARF: the one frame ``name(for:isReturnAddress:)``
    /// gives, without a line. Cached per address.
    public func sourceFrames(for address: UInt64, isReturnAddress: Bool) -> [SourceFrame] {
        let key = isReturnAddress && address > 0 ? address - 1 : address
        if let known = sourceCache[key] { return known }
        let name = name(for: address, isReturnAddress: isReturnAddress)
        var result = [SourceFrame(function: name)]
        if let image = image(containing: key), let found = dwarfFrames(at: key, in: image), !found.isEmpty {
            // libdw's are innermost first; the outermost is the function with the code: the symbol's name.
            result = found.reversed().enumerated().map { index, frame in
                let function = index == 0 ? name : frame.function.map(readable) ?? "[inlined]"
                return SourceFrame(function: function, file: frame.file, line: frame.line, inlined: index > 0)
            }
        }
        sourceCache[key] = result
        return result
    }

    /// The frames at `address` (already the looked-up one) in `image`, innermost first, as the debug information
    /// has them: the embedded table's when it has the address, else from the image's DWARF (its file's, or a debug
    /// file's). Nil when the image has no line information (noted for ``linesWarning``); empty when it has none
    /// for this address.
    func dwarfFrames(at address: UInt64, in image: ImageRecord) -> [EmbeddedSourceFrame]? {
        if let entry = table[address] {
            guard entry.frames.isEmpty, !Self.isVDSO(image.path), tableWithoutLines.contains(image.path) else {
                return entry.frames
            }
            withoutLines.insert(image.path)
            return nil
        }
        if Self.isVDSO(image.path) { return [] }  // the vDSO's copy has no DWARF
        readDwarf = true
        guard let dwarf = dwarf(for: image) else {
            withoutLines.insert(image.path)
            return nil
        }
        return dwarf.frames(at: address &- image.loadBias).map {
            EmbeddedSourceFrame(function: $0.function, file: $0.file, line: $0.line)
        }
    }

    /// ``rootFirstNames(leafFirst:)`` with ``SymbolizerOptions/lines`` or ``SymbolizerOptions/inlines``: each
    /// frame `function:File.swift:66`, inlined ones their own frames `function_[i]:File.swift:12`.
    func rootFirstNamesWithLines(leafFirst addresses: [UInt64]) -> [String] {
        var names: [String] = [], full: [String] = []
        names.reserveCapacity(addresses.count)
        full.reserveCapacity(addresses.count)
        for index in stride(from: addresses.count - 1, through: 0, by: -1) {
            let address = addresses[index]
            let made = rendered(address, isReturnAddress: index > 0)
            names += made.names
            full += made.full
        }
        // Forwarders shown as their closures (on names alone, before lines are added): rare, so only the names
        // that changed are made again.
        var shown = names
        Self.showForwardedClosures(&shown, offsets: options.showOffsets)
        for index in shown.indices where shown[index] != names[index] {
            full[index] = shown[index] + String(decoding: full[index].utf8.dropFirst(names[index].utf8.count), as: UTF8.self)
        }
        return full
    }

    /// The names at `address` (one, or with inlines each inlined function's), the same with what follows them
    /// (`_[i]`, `:Workloads.swift:66`), and each one's place (`Workloads.swift:66`): made once per address.
    private func rendered(_ address: UInt64, isReturnAddress: Bool)
        -> (names: [String], full: [String], places: [String?])
    {
        let key = isReturnAddress && address > 0 ? address - 1 : address
        if let known = renderCache[key] { return known }
        let found = sourceFrames(for: address, isReturnAddress: isReturnAddress)
        let frames = options.inlines ? found : [found[0]]
        let made = (names: frames.map(\.function), full: frames.map { frame in
            frame.function + (frame.inlined ? "_[i]" : "") + (options.lines ? frame.shortLocation.map { ":" + $0 } ?? "" : "")
        }, places: frames.map(\.shortLocation))
        renderCache[key] = made
        return made
    }

    /// Each frame of a stack (leaf first), root first, as ``rootFirstNames(leafFirst:)`` names it without
    /// ``SymbolizerOptions/lines`` (inlined frames their own with ``SymbolizerOptions/inlines``), with its place
    /// apart: `Workloads.swift:66`, nil where none is known. For outputs that keep a function's frames whole and
    /// show lines beside them (the flame graph's tooltips).
    public func rootFirstNamesAndPlaces(leafFirst addresses: [UInt64]) -> [(name: String, place: String?)] {
        var names: [String] = [], inlined: [Bool] = [], places: [String?] = []
        for index in stride(from: addresses.count - 1, through: 0, by: -1) {
            let made = rendered(addresses[index], isReturnAddress: index > 0)
            names += made.names
            inlined += made.names.indices.map { $0 > 0 }  // with inlines, every frame after the machine frame's
            places += made.places
        }
        // As rootFirstNamesWithLines: forwarders shown as their closures on the bare names, then the marks.
        Self.showForwardedClosures(&names, offsets: options.showOffsets)
        return names.indices.map { (names[$0] + (inlined[$0] ? "_[i]" : ""), places[$0]) }
    }

    /// Where each frame of a stack (leaf first) was in the source, root first, aligned with
    /// ``rootFirstNames(leafFirst:)``: nil for a frame without a line; empty with ``SymbolizerOptions/inlines``
    /// (names are more than frames then) or when no frame has a place.
    public func rootFirstPlaces(leafFirst frames: [UInt64]) -> [SourcePlace?] {
        if options.inlines { return [] }
        let places = frames.indices.reversed().map { index in
            SourcePlace(sourceFrames(for: frames[index], isReturnAddress: index > 0))
        }
        return places.contains { $0 != nil } ? places : []
    }

    /// The one warning about lines when ``SymbolizerOptions/lines`` or ``SymbolizerOptions/inlines`` asked for
    /// them and some frames have none: libdw is missing (and some line was to be read from a file), or the images
    /// without DWARF, by file name; nil otherwise.
    public var linesWarning: String? {
        guard options.lines || options.inlines else { return nil }
        // Only when some line was looked up in a file: a symbolicated capture's come from the capture.
        if readDwarf && !DwarfLines.isAvailable {
            return "libdw.so.1 (elfutils) was not found: no source lines (Debian: apt-get install libdw1)"
        }
        guard !withoutLines.isEmpty else { return nil }
        let names = imagesWithoutLines.map { $0.split(separator: "/").last.map(String.init) ?? $0 }
        let listed = names.prefix(5).joined(separator: ", ") + (names.count > 5 ? " and \(names.count - 5) more" : "")
        return "no line information (DWARF) in \(names.count) image\(names.count == 1 ? "" : "s"): \(listed); their "
            + "frames have no lines (--debug-dir finds debug files by build-id)"
    }

    /// The images some frame was looked up in for lines that had no DWARF (or whose file could not be read), by
    /// path, sorted: the analyzer's one warning about lines names them.
    public var imagesWithoutLines: [String] { withoutLines.sorted() }

    /// `name` demangled as the options say.
    private func readable(_ name: String) -> String {
        guard options.demangle else { return name }
        let readable = (options.simplifyNames ? SwiftDemangler.simplified(name) : nil) ?? SwiftDemangler.symbolName(name)
        return options.names == .short ? ShortNames.short(readable) : readable
    }

    /// `image`'s DWARF: its own file's, else a debug file's with its build-id; nil when neither has any.
    func dwarf(for image: ImageRecord) -> DwarfLines? {
        if let known = dwarfFiles[image.path] { return known }
        var found: DwarfLines? = nil
        if let elf = symbols(ofImage: image) {
            found = DwarfLines.shared(path: elf.path)
            if found == nil, let debug = debugFile(for: image)?.path, debug != elf.path {
                found = DwarfLines.shared(path: debug)
            }
        }
        dwarfFiles[image.path] = .some(found)
        return found
    }
}
