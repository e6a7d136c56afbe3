/// Reads `perf script` output and folds it exactly as FlameGraph's stackcollapse-perf.pl does, byte for byte, except
/// where KNOWN_DIVERGENCES.tsv says inferno fixed a Perl bug: the last stack is kept when the file does not end in a
/// blank line, an event line that carries its only frame is read, C++ argument lists are cut with bracket depth,
/// versioned vmlinux modules are kernel and jitdump modules are JIT (see docs/FOLD.md).
public struct PerfScriptImporter: StackImporter {
    /// Options for perf script input, named after stackcollapse-perf.pl's. Every field documents its default.
    public struct Options: Sendable {
        /// `--pid`: the root frame is `comm-PID`. Default: false (`comm`).
        public var includePID = false
        /// `--tid`: the root frame is `comm-PID/TID`. Default: false.
        public var includeTID = false
        /// `--kernel`: append `_[k]` to kernel frames. Default: false.
        public var annotateKernel = false
        /// `--jit`: append `_[j]` to JIT frames (`/tmp/perf-PID.map`, jitdump objects). Default: false.
        public var annotateJIT = false
        /// `--addrs`: show unknown symbols as `[module <address>]`. Default: false (`[module]`).
        public var includeAddresses = false
        /// `--inline`: append `_[i]` to frames perf prints as `(inlined)`. Default: false, they stay plain frames
        /// like stackcollapse-perf.pl keeps them.
        public var markInlined = false
        /// `--event-filter`: keep only samples of this event (as perf prints it, e.g. `cycles:u`). Default: nil, the
        /// first event type seen, like the reference.
        public var eventFilter: String? = nil
        /// `--count samples`: count each sample once. Default: false, samples are weighted by their period.
        public var countSamples = false
        /// `--demangle`: repair partially demangled Rust symbols (as inferno does). Default: false.
        public var repairRust = false
        /// `--perl-compat`: reproduce stackcollapse-perf.pl exactly, bugs included: drop a last stack that no blank
        /// line ends, ignore an event line's own frame, cut argument lists at the first `(`, only `[...]` and
        /// `vmlinux` modules are kernel, only `/tmp/perf-PID.map` is JIT. Default: false, inferno's fixes apply.
        public var perlCompatible = false
        /// `--strict`: an unrecognized line is an error. Default: false, they are counted and reported.
        public var strict = false
        /// `--skip-after FUNCTION` (inferno's, repeatable): the frames of a stack above (toward the root of) the
        /// leaf-most frame named one of these are dropped; that frame stays, under the process. Default: none.
        public var skipAfter: Set<String> = []
        /// A sample without a call chain gets the frame `[no stack]` under its process, so a summary never reads
        /// the process as a function (`report` sets it). Default: false, the process alone, as
        /// stackcollapse-perf.pl folds it.
        public var markEmptyStacks = false

        /// Creates the default options.
        public init() {}
    }

    /// `perf`.
    public static let formatName = "perf"

    /// The first line that is not a comment or blank is an event line and the next one a frame line (or the event
    /// line carries its frame).
    public static func recognizes(_ head: ArraySlice<UInt8>) -> Bool {
        var lines = head.split(separator: 10, omittingEmptySubsequences: false).makeIterator()
        var events = 0  // event lines without a call chain (`perf record -g` of code it could not unwind) so far
        while let raw = lines.next() {
            let line = Array(raw.last == 13 ? raw.dropLast() : raw)
            if line.first == UInt8(ascii: "#") || line.allSatisfy(PerfLineSyntax.isSpace) { continue }
            enum Verdict { case perf, notPerf, emptyChain }
            let verdict = line.withUnsafeBufferPointer { line -> Verdict in
                if PerfLineSyntax.singleLineEvent(line) != nil { return .perf }
                guard PerfLineSyntax.eventFields(line) != nil, let next = lines.next() else { return .notPerf }
                let nextLine = Array(next.last == 13 ? next.dropLast() : next)
                if nextLine.withUnsafeBufferPointer({ PerfLineSyntax.frameFields($0) != nil }) { return .perf }
                return nextLine.allSatisfy(PerfLineSyntax.isSpace) ? .emptyChain : .notPerf
            }
            switch verdict {
            case .perf: return true
            case .notPerf: return false
            case .emptyChain: events += 1  // the next event decides (two such events in a row are perf too)
            }
        }
        return events > 1
    }

    /// The options in use.
    public let options: Options

    /// Creates an importer.
    public init(options: Options = Options()) { self.options = options }

    /// An importer with the options of `fold`'s ``FoldOptions/perf``.
    public init(_ fold: FoldOptions) { self.init(options: fold.perf) }

    /// Streams `stream` and adds one stack per sample.
    public func importStacks(from stream: ByteStream, into stacks: inout FoldedStacks, diagnostics: inout Diagnostics)
        throws
    {
        var state = PerfFoldState(options: options, path: stream.name)
        try stream.forEachLine { line, number in try state.consume(line, number: number, into: &stacks) }
        state.finish(into: &stacks, diagnostics: &diagnostics)
    }
}
