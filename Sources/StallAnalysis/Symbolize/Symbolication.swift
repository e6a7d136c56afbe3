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
    /// The capture `input` holds, with its addresses resolved: its records as read (a record cut short at the end
    /// is dropped with a warning; an earlier symbolication is replaced), then the symbolication and symbols records.
    /// An address this machine cannot resolve keeps what an earlier symbolication found for it. Problems found
    /// (an image file missing or rebuilt, images without line information) are `diagnostics`' warnings.
    public static func symbolicate(
        _ input: InputSource, options: SymbolicateOptions = .init(), diagnostics: inout Diagnostics
    ) throws -> [UInt8] {
        let stream = try input.open()
        let bytes = try stream.readAll()
        let records: [CaptureRecord]
        let capture: Capture
        do {
            (records, _) = try CaptureReader.records(bytes, source: stream.name)
            capture = try CaptureReader.parse(bytes, source: stream.name)
        } catch let error as CaptureFormatError {
            throw AnalysisError.badData(path: error.source, position: "byte \(error.offset)", reason: error.reason)
        }
        capture.warnings.forEach { diagnostics.warn($0) }
        var lookup = options.symbolizer
        lookup.lines = true  // the warning about images without lines
        let symbolizer = Symbolizer(images: capture.images, contents: capture.imageContents, options: lookup)
        var entries: [UInt64: EmbeddedSymbol] = [:]
        var touched = Set<String>()
        for address in addresses(of: capture) {
            guard let image = symbolizer.image(containing: address) else { continue }
            touched.insert(image.path)
            let symbol = symbolizer.symbol(containing: address, in: image)
            let frames = symbolizer.dwarfFrames(at: address, in: image) ?? []
            if symbol == nil, frames.isEmpty, let earlier = capture.symbols[address] {
                entries[address] = earlier
                continue
            }
            entries[address] = EmbeddedSymbol(
                symbol: symbol?.name, offset: symbol?.offset ?? 0, isPLT: symbol?.isPLT ?? false, frames: frames)
        }
        symbolizer.warnings.forEach { diagnostics.warn("\(capture.source): \($0)") }
        if let lines = symbolizer.linesWarning { diagnostics.warn("\(capture.source): \(lines)") }
        let sources = capture.images.filter { touched.remove($0.path) != nil }.map { image in
            let symbols = Symbolizer.isVDSO(image.path) && symbolizer.symbols(ofImage: image) != nil
                ? "(copied from memory)" : symbolizer.symbols(ofImage: image)?.path ?? ""
            return SymbolicationRecord.Source(
                image: image.path, symbols: symbols, lines: symbolizer.dwarf(for: image)?.path ?? "")
        }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let machine = SyscallNames.machine(ofExecutable: capture.process?.executable)
        let symbolication = SymbolicationRecord(
            wallNs: UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec),
            machine: machine != 0 ? machine : capture.symbolication?.machine ?? 0,
            appModules: AppCodeRule(capture: capture, lookup: lookup).appModules ?? [], sources: sources)
        var kept = records.filter {
            switch $0 {
            case .symbolication, .symbols: return false
            default: return true
            }
        }
        kept.append(.symbolication(symbolication))
        let sorted = entries.sorted { $0.key < $1.key }
        for start in stride(from: 0, to: sorted.count, by: SymbolsRecord.entriesPerRecord) {
            let batch = sorted[start..<min(start + SymbolsRecord.entriesPerRecord, sorted.count)]
            kept.append(.symbols(SymbolsRecord(entries: Dictionary(uniqueKeysWithValues: batch.map { ($0.key, $0.value) }))))
        }
        return CaptureFormat.file(of: kept)
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
