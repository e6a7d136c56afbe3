/// One row of ``InputFormat/table``: a format's name, its detector, its importer and how reports name it.
public struct InputFormatRow: Sendable {
    /// The format, named as its importer's ``StackImporter/formatName``.
    public let format: InputFormat
    /// How a report's text names the format (`perf script`, `macOS sample`).
    public let displayName: String
    /// When `--format auto` tries the format: lower first. A detector that accepts more kinds of text (folded
    /// stacks accept any line ending in a number) comes after the stricter ones.
    public let detectionOrder: Int
    /// True when an input's first bytes look like the format (``StackImporter/recognizes(_:)``).
    public let recognizes: @Sendable (ArraySlice<UInt8>) -> Bool
    /// Reads a whole input of the format with its options out of a fold's options and adds its stacks.
    let importStacks: @Sendable (ByteStream, FoldOptions, inout FoldedStacks, inout Diagnostics) throws -> Void

    /// The row of the format `importer` reads.
    public init<Importer: StackImporter>(_ importer: Importer.Type, displayName: String, detectionOrder: Int) {
        format = InputFormat(name: Importer.formatName)
        self.displayName = displayName
        self.detectionOrder = detectionOrder
        recognizes = { Importer.recognizes($0) }
        importStacks = { stream, options, stacks, diagnostics in
            try Importer(options).importStacks(from: stream, into: &stacks, diagnostics: &diagnostics)
        }
    }
}
