/// Reads the inputs of `stallprof flamegraph` and `stallprof diff`: folded text (one or two counts per line) or
/// anything ``Folder`` reads (folded on the fly).
public enum ProfileLoader {
    /// The stacks of every input, in input order (folded inputs keep their line order; other inputs come in byte
    /// order, except captures with `timeOrder`: their samples in time order, newest first, for a flame chart).
    public static func load(_ inputs: [InputSource], options: FoldOptions, timeOrder: Bool = false) throws
        -> (StackProfile, Diagnostics)
    {
        var stacks: [ProfileStack] = []
        var diagnostics = Diagnostics()
        for input in inputs {
            let stream = try input.open()
            if try Folder.isEmptyInput(stream) {
                diagnostics.emptyInput(stream.name)
                continue
            }
            let head = try stream.peek(Folder.detectionBytes)
            if options.format == .auto, !StallCaptureImporter.recognizes(head), FoldedTextReader.recognizes(head) {
                try FoldedTextReader.read(stream, into: &stacks, diagnostics: &diagnostics)
                continue
            }
            if timeOrder, options.format == .auto || options.format == .stallprof, StallCaptureImporter.recognizes(head) {
                let importer = StallCaptureImporter(options: options.capture)
                stacks += importer.timeOrdered(try StallCaptureImporter.read(stream), diagnostics: &diagnostics)
                continue
            }
            var folded = FoldedStacks()
            try Folder.fold(stream, options: options, into: &folded, diagnostics: &diagnostics)
            stacks += StackProfile(options.transforms.apply(to: folded)).stacks
        }
        return (StackProfile(stacks: stacks), diagnostics)
    }
}
