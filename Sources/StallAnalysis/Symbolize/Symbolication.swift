#if canImport(Glibc)
import Glibc
#endif
import StallFormat

/// How `stallprof symbolicate` resolves a capture's addresses.
public struct SymbolicateOptions: Sendable {
    /// Where image files' debug files are looked for, and the rest of the symbolizer's settings (only
    /// ``SymbolizerOptions/debugDirectories`` and ``SymbolizerOptions/systemDebugDirectory`` matter: what is written
    /// is raw symbols and the debug information's own names, whatever the names' style). Default: the
    /// symbolizer's defaults (`/usr/lib/debug`).
    public var symbolizer = SymbolizerOptions()

    /// Creates the default options.
    public init() {}
}

/// Makes a capture self-contained (`stallprof symbolicate`): every address it holds is resolved now, from the image
/// files and debug files of this machine, and the results are written into the capture (``SymbolsRecord``), with
/// when and from which files (``SymbolicationRecord``). Every command then reads the capture the same on a machine
/// without its binaries: names, lines, inlined frames, the app's modules and the machine's system call names.
public enum Symbolication {
    /// The capture `input` holds, with its addresses resolved: its records byte for byte (a record cut short at the
    /// end is dropped with a warning; an earlier symbolication's records are replaced), then the symbolication and
    /// symbols records. What this machine cannot resolve (a symbol, lines) keeps what an earlier symbolication found;
    /// an address nothing resolved, nor an earlier run, in an image without a full symbol table, gets no entry. Problems found (an
    /// image file missing or rebuilt, images without line information) are `diagnostics`' warnings.
    public static func symbolicate(
        _ input: InputSource, options: SymbolicateOptions = .init(), diagnostics: inout Diagnostics
    ) throws -> [UInt8] {
        let stream = try input.open()
        let bytes = try stream.readAll()
        let capture = try StallCaptureImporter.parse(bytes, source: stream.name)
        capture.warnings.forEach { diagnostics.warn($0) }
        var lookup = options.symbolizer
        lookup.lines = true  // the warning about images without lines
        // Files only: what an earlier symbolication found is merged below, field by field.
        let symbolizer = Symbolizer(images: capture.images, contents: capture.imageContents, options: lookup)
        let earlier = Dictionary(
            (capture.symbolication?.sources ?? []).map { ($0.image, $0) }, uniquingKeysWith: { first, _ in first })
        var entries: [UInt64: EmbeddedSymbol] = [:]
        var touched = Set<String>()
        for address in addresses(of: capture) {
            guard let image = symbolizer.image(containing: address) else { continue }
            touched.insert(image.path)
            let symbol = symbolizer.symbol(containing: address, in: image)
            let frames = symbolizer.dwarfFrames(at: address, in: image) ?? []
            let before = capture.symbols[address]
            let entry = EmbeddedSymbol(
                symbol: symbol?.name ?? before?.symbol, offset: symbol?.offset ?? before?.offset ?? 0,
                isPLT: symbol?.isPLT ?? before?.isPLT ?? false, frames: frames.isEmpty ? before?.frames ?? [] : frames)
            // Nothing resolved, and no full symbol table read (the file is missing, stripped, rebuilt): no entry, so
            // that readers look at the image's files as for a capture never symbolicated (where the binary or its
            // debug file is, it is named). Only a full table's "no symbol here" is an answer worth keeping.
            if entry.symbol == nil, entry.frames.isEmpty, before == nil,
                symbolizer.symbols(ofImage: image)?.hasFullSymbolTable != true
            {
                continue
            }
            entries[address] = entry
        }
        let sources = capture.images.filter { touched.remove($0.path) != nil }.map { image in
            let symbols = Symbolizer.isVDSO(image.path) && symbolizer.symbols(ofImage: image) != nil
                ? "(copied from memory)" : symbolizer.symbols(ofImage: image)?.path
            let before = earlier[image.path]
            return SymbolicationRecord.Source(
                image: image.path, symbols: symbols ?? before?.symbols ?? "",
                lines: symbolizer.dwarf(for: image)?.path ?? before?.lines ?? "")
        }
        // Images an earlier symbolication resolved are no problem here: their names and lines are kept.
        let kept = Set(sources.filter { earlier[$0.image] != nil }.flatMap { source in
            [source.symbols.isEmpty ? nil : source.image, source.lines.isEmpty ? nil : "lines:" + source.image]
        }.compactMap { $0 })
        symbolizer.withoutLines = symbolizer.withoutLines.filter { !kept.contains("lines:" + $0) }
        for warning in symbolizer.warnings where !kept.contains(where: { warning.hasPrefix($0 + ": ") }) {
            diagnostics.warn("\(capture.source): \(warning)")
        }
        if let lines = symbolizer.linesWarning { diagnostics.warn("\(capture.source): \(lines)") }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let machine = SyscallNames.machine(ofExecutable: capture.process?.executable)
        let modules = AppCodeRule(capture: capture, lookup: lookup).appModules ?? []
        let symbolication = SymbolicationRecord(
            wallNs: UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec),
            machine: machine != 0 ? machine : capture.symbolication?.machine ?? 0,
            appModules: modules.isEmpty ? capture.symbolication?.appModules ?? [] : modules, sources: sources)
        var records: [CaptureRecord] = [.symbolication(symbolication)]
        let sorted = entries.sorted { $0.key < $1.key }
        for start in stride(from: 0, to: sorted.count, by: SymbolsRecord.entriesPerRecord) {
            let batch = sorted[start..<min(start + SymbolsRecord.entriesPerRecord, sorted.count)]
            records.append(.symbols(SymbolsRecord(entries: Dictionary(uniqueKeysWithValues: batch.map { ($0.key, $0.value) }))))
        }
        return CaptureFormat.file(copying: bytes, appending: records)
    }

    /// Every address an analyzer looks up in `capture`, as it looks it up: each stack's leaf as it is and less one
    /// (a stack read from memory ends at the instruction after a system call), every other frame less one (the call
    /// before its return address). Samples, the owner's stack of a blocked episode, every thread's stack.
    static func addresses(of capture: Capture) -> Set<UInt64> {
        var found = Set<UInt64>()
        func add(_ frames: [UInt64]) {
            for (index, frame) in frames.enumerated() where frame > 0 {
                found.insert(frame - 1)
                if index == 0 { found.insert(frame) }
            }
        }
        for stall in capture.stalls {
            stall.samples.forEach { add($0.frames) }
            if let blocked = stall.blockedOn { add(blocked.ownerFrames) }
            for record in stall.threads { record.threads.forEach { add($0.frames) } }
        }
        return found
    }
}
