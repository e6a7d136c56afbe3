import StallFormat

/// An opened input and its format, detected once: what every command (fold, flamegraph, diff, report, export)
/// reads through ``InputLoader/open(_:)``.
public struct DetectedInput {
    /// The input, positioned at its start (detection only peeked; UTF-16 text already transcoded to UTF-8).
    public let stream: ByteStream
    /// Its format's row of ``InputFormat/table``: the one requested, or the one detected for `.auto`.
    public let row: InputFormatRow

    /// Its format: the one requested, or the one detected for `.auto`; never `.auto`.
    public var format: InputFormat { row.format }
}

/// The one format detector of every command.
extension Folder {
    /// How many bytes format detection looks at (perf script headers can be long).
    static let detectionBytes = 1 << 16

    /// Opens `input` and detects its format (or checks that it can be `format`): nil, with the empty-input warning
    /// every command gives (``Diagnostics/emptyInput(_:)``), when it holds no data. Known binary files
    /// (perf.data, pprof, gzip, ELF...) and text no reader recognizes are bad data naming the file, the position
    /// and what the file is.
    public static func open(_ input: InputSource, format: InputFormat, diagnostics: inout Diagnostics) throws
        -> DetectedInput?
    {
        try detect(input.open(), format: format, diagnostics: &diagnostics)
    }

    /// As ``open(_:format:diagnostics:)``, for a stream already opened (and perhaps peeked at).
    public static func detect(_ opened: ByteStream, format: InputFormat, diagnostics: inout Diagnostics) throws
        -> DetectedInput?
    {
        let stream = try opened.decompressingGzip().decodingUTF16()
        if try isEmptyInput(stream) {
            diagnostics.emptyInput(stream.name)
            return nil
        }
        return DetectedInput(stream: stream, row: try resolveRow(format, stream: stream))
    }

    /// True when `stream` holds no data: no bytes, or only white space. Every command treats such an input the
    /// same way: a warning naming it (``Diagnostics/emptyInput(_:)``), no stacks, exit 0.
    public static func isEmptyInput(_ stream: ByteStream) throws -> Bool {
        let head = try stream.peek(detectionBytes)
        return head.count < detectionBytes && head.allSatisfy { $0 == 32 || ($0 >= 9 && $0 <= 13) }
    }

    /// The concrete format of `stream`: the requested one, or the detected one for `.auto`. A known binary file is
    /// named whatever was requested (but a capture); other binary data is refused for a text format.
    static func resolve(_ format: InputFormat, stream: ByteStream) throws -> InputFormat {
        try resolveRow(format, stream: stream).format
    }

    /// The row of ``resolve(_:stream:)``'s format.
    static func resolveRow(_ format: InputFormat, stream: ByteStream) throws -> InputFormatRow {
        var head = try stream.peek(detectionBytes)
        if format == .stallprof, let row = format.row { return row }
        if !StallCaptureImporter.recognizes(head), let binary = BinaryInput.name(head, path: stream.name) {
            throw StallError.badData(path: stream.name, position: "byte 0", reason: binary)
        }
        if let row = format.row {
            if let nul = head.firstIndex(of: 0) {
                throw StallError.badData(
                    path: stream.name, position: "byte \(nul - head.startIndex)",
                    reason: "binary data (\(BinaryInput.describe(head))), not a \(format.rawValue) text profile")
            }
            return row
        }
        // A first line longer than the window (a deep folded stack): look further, up to the line length limit.
        while !head.contains(10) && head.count >= detectionBytes && head.count < ByteStream.maxLineLength {
            let longer = try stream.peek(min(head.count * 4, ByteStream.maxLineLength))
            if longer.count == head.count { break }
            head = longer
        }
        let detectable = InputFormat.detectionRows
        if let found = detectable.first(where: { $0.recognizes(head) }) { return found }
        let tried = detectable.map(\.format.rawValue).joined(separator: ", ")
        if let nul = head.firstIndex(of: 0) {
            throw StallError.badData(
                path: stream.name, position: "byte \(nul - head.startIndex)",
                reason: "binary data (\(BinaryInput.describe(head))), not a profile stallprof reads (tried \(tried))")
        }
        let lines = head.split(separator: 10, omittingEmptySubsequences: false)
        guard let index = lines.firstIndex(where: { line in
            !line.allSatisfy(PerfLineSyntax.isSpace) && line.first != UInt8(ascii: "#")
        }) else {
            throw StallError.badData(
                path: stream.name, position: "",
                reason: head.isEmpty
                    ? "empty input; cannot detect its format (tried \(tried))"
                    : "no data lines, only blank or comment lines; cannot detect the format (tried \(tried))")
        }
        throw StallError.badData(
            path: stream.name, position: "line \(index + 1)",
            reason: "cannot detect the format (tried \(tried)); this line fits none: "
                + UnrecognizedLines.quote(lines[index]) + "; use --format")
    }
}
