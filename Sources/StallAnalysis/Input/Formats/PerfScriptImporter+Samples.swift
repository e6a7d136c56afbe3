/// perf script samples one by one, for the timed exports (``PerfTimelineBuilder``): each with its stack as `fold`
/// counts it, its weight, time, process, thread, command and each frame's address and module.
extension PerfScriptImporter {
    /// One sample as it is folded: its stack (`comm;root;...;leaf`, the bytes ``importStacks(from:into:diagnostics:)``
    /// counts), its weight, and where and when it was taken.
    public struct Sample {
        /// The folded stack's bytes, valid during the call only.
        public var stack: UnsafeRawBufferPointer
        /// Its weight: the period, or 1 (``Options/countSamples``, or no period on the line).
        public var weight: FoldedCount
        /// The sample's time in nanoseconds (perf's clock, since boot); nil when the line has none.
        public var timeNs: UInt64?
        /// Process id; nil when the line gives the thread id alone.
        public var pid: Int32?
        /// Thread id; nil when it (or the pid before it) does not fit in 32 bits.
        public var tid: Int32?
        /// The command name as perf prints it.
        public var comm: Substring
        /// The line number of the sample's event line.
        public var line: Int
        /// Where each frame of ``stack`` after the command was, root first: the address perf printed and the
        /// module between its parentheses (a frame line split at `->` gives each piece its line's).
        public var places: [(address: UInt64, module: Substring)]
    }

    /// Streams `stream` and calls `body` with each sample, in input order, as ``importStacks(from:into:diagnostics:)``
    /// would count it (same options, same warnings). Returns the unit of the weights (nil: none was read).
    public func forEachSample(in stream: ByteStream, diagnostics: inout Diagnostics, _ body: @escaping (Sample) -> Void)
        throws -> CountUnit?
    {
        var state = PerfFoldState(options: options, path: stream.name)
        state.sampleSink = body
        var none = FoldedStacks()
        try stream.forEachLine { line, number in try state.consume(line, number: number, into: &none) }
        state.finish(into: &none, diagnostics: &diagnostics)
        return none.unit
    }
}

extension PerfFoldState {
    /// Notes a frame line's address (hex) and module for ``sampleSink``.
    mutating func notePlace(_ line: Bytes, _ fields: PerfLineSyntax.FrameFields?) {
        guard let fields else { return linePlaces.append((0, "")) }
        let address = UInt64(String(decoding: line[fields.pc], as: UTF8.self), radix: 16) ?? 0
        linePlaces.append((address, Substring(String(decoding: line[fields.module], as: UTF8.self))))
    }
}
