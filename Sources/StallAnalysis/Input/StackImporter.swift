/// One input format that `stallprof fold` (and everything built on folding) can read.
///
/// Each format lives in its own file under `Input/Formats/`, with an `Options` struct whose fields document their
/// defaults, and has one row in ``InputFormat/table``. An importer streams its input and adds weighted stacks, root
/// first, to a ``FoldedStacks``. A format with options of its own keeps them in a field of ``FoldOptions``, which
/// ``init(_:)`` reads.
public protocol StackImporter {
    /// The format's options; every field documents its default.
    associatedtype Options: Sendable

    /// The name `--format` uses for this format.
    static var formatName: String { get }

    /// True when the first bytes of an input look like this format (used by `--format auto`).
    static func recognizes(_ head: ArraySlice<UInt8>) -> Bool

    /// The options this importer was made with.
    var options: Options { get }

    /// An importer with this format's options out of `fold` (``FoldOptions/perf`` for perf script).
    init(_ fold: FoldOptions)

    /// Reads all of `stream` and adds its stacks to `stacks`; tolerated problems go to `diagnostics`.
    func importStacks(from stream: ByteStream, into stacks: inout FoldedStacks, diagnostics: inout Diagnostics) throws
}
