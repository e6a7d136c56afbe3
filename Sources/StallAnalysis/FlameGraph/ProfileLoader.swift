#if canImport(Glibc)
import Glibc
#endif

/// Reads the inputs of `stallprof flamegraph` and `stallprof diff`: folded text (one or two counts per line) or
/// anything ``Folder`` reads (folded on the fly).
public enum ProfileLoader {
    /// The stacks of every input, in input order (folded inputs keep their line order; folded captures come in
    /// byte order).
    public static func load(_ inputs: [InputSource], options: FoldOptions) throws -> (StackProfile, Diagnostics) {
        var stacks: [ProfileStack] = []
        var diagnostics = Diagnostics()
        for input in inputs {
            let stream = try input.open()
            let head = try stream.peek(Folder.detectionBytes)
            if options.format == .auto, !StallCaptureImporter.recognizes(head), FoldedTextReader.recognizes(head) {
                try FoldedTextReader.read(stream, into: &stacks, diagnostics: &diagnostics)
                continue
            }
            let (folded, found) = try foldWithFolder(input, stream: stream, options: options)
            stacks += StackProfile(folded).stacks
            found.warnings.forEach { diagnostics.warn($0) }
        }
        return (StackProfile(stacks: stacks), diagnostics)
    }

    /// Folds one input with ``Folder``. Standard input has been partly read by detection, so it is spooled to a
    /// temporary file first; messages still name `<stdin>`.
    private static func foldWithFolder(_ input: InputSource, stream: ByteStream, options: FoldOptions) throws
        -> (FoldedStacks, Diagnostics)
    {
        guard input.isStandardInput else { return try Folder.fold([input], options: options) }
        var template = Array("/tmp/stallprof-stdin-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw AnalysisError.input(path: input.description, reason: "cannot spool: \(errno)") }
        let path = String(cString: template)
        defer { unlink(path) }
        let bytes = try stream.readAll()
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard written == bytes.count else {
            throw AnalysisError.input(path: input.description, reason: "cannot spool to \(path)")
        }
        let rename: (String) -> String = { $0.replacingOccurrences(path, with: input.description) }
        do {
            let (stacks, found) = try Folder.fold([InputSource(path: path)], options: options)
            var renamed = Diagnostics()
            found.warnings.forEach { renamed.warn(rename($0)) }
            return (stacks, renamed)
        } catch AnalysisError.badData(let where_, let position, let reason) {
            throw AnalysisError.badData(path: rename(where_), position: position, reason: rename(reason))
        } catch AnalysisError.input(let where_, let reason) {
            throw AnalysisError.input(path: rename(where_), reason: rename(reason))
        }
    }
}
