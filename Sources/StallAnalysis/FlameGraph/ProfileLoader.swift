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
            var folded = FoldedStacks()
            try Folder.fold(stream, options: options, into: &folded, diagnostics: &diagnostics)
            stacks += StackProfile(options.transforms.apply(to: folded)).stacks
        }
        return (StackProfile(stacks: stacks), diagnostics)
    }
}
