/// Folds inputs of any known format into one set of stacks.
public enum Folder {
    /// Folds every input together, then applies `options.transforms`. Returns the stacks and the tolerated problems.
    /// Inputs are parsed in parallel (a fleet's or a CI matrix's captures use every core) and their counts summed
    /// in input order; the first input that fails, in input order, is the error thrown.
    public static func fold(_ inputs: [InputSource], options: FoldOptions) throws -> (FoldedStacks, Diagnostics) {
        var stacks = FoldedStacks()
        var diagnostics = Diagnostics()
        // As many inputs at once as there are cores, merged before the next ones: memory holds the sum so far and
        // one table per core, not one per input. Standard input named twice is read in turn (the second time it
        // is empty), never by two threads at once.
        let width = inputs.filter(\.isStandardInput).count > 1 ? 1 : Parallel.width
        for start in stride(from: 0, to: inputs.count, by: width) {
            let window = Array(inputs[start..<min(start + width, inputs.count)])
            try fold(window, options: options, into: &stacks, diagnostics: &diagnostics)
        }
        return (options.transforms.apply(to: stacks, diagnostics: &diagnostics), diagnostics)
    }

    /// Folds `inputs` in parallel and adds them to `stacks` in input order.
    private static func fold(_ inputs: [InputSource], options: FoldOptions, into stacks: inout FoldedStacks,
                             diagnostics: inout Diagnostics) throws {
        let parts = Parallel.map(inputs) { input in
            var stacks = FoldedStacks()
            var loader = InputLoader(options: options)
            if let opened = try loader.open(input) {
                try fold(opened, options: options, into: &stacks, diagnostics: &loader.diagnostics)
            }
            return (stacks, loader.diagnostics)
        }
        for (input, part) in zip(inputs, parts) {
            let (partStacks, partDiagnostics) = try part.get()
            diagnostics.merge(partDiagnostics)
            merge(partStacks, of: "\(input)", into: &stacks, diagnostics: &diagnostics)
        }
    }

    /// Adds the stacks of one input (`name`) to those of the inputs before it, as every command adds inputs: a
    /// stack whose count over the inputs would reach 2^64 keeps its count so far and this input's count of it is
    /// dropped with a warning. Returns the entry numbers, in `part`, of the stacks dropped.
    @discardableResult
    static func merge(_ part: FoldedStacks, of name: String, into stacks: inout FoldedStacks,
                      diagnostics: inout Diagnostics) -> [Int] {
        let dropped = stacks.mergeReportingEntries(part)
        part.withEntries { entry in
            for index in dropped {
                let stack = String(decoding: entry(index).bytes, as: UTF8.self)
                let shown = stack.count > 120 ? stack.prefix(120) + "..." : Substring(stack)
                diagnostics.warn("\(name): dropped this input's count of '\(shown)': the sum over the inputs "
                    + "would exceed 2^64-1")
            }
        }
        return dropped
    }

    /// Folds one already opened input (detection included; a stream that was only peeked at is fine) into `stacks`.
    /// `options.transforms` are not applied: apply them once all inputs are folded.
    public static func fold(_ opened: ByteStream, options: FoldOptions, into stacks: inout FoldedStacks,
                            diagnostics: inout Diagnostics) throws {
        guard let input = try detect(opened, format: options.format, diagnostics: &diagnostics) else { return }
        try fold(input, options: options, into: &stacks, diagnostics: &diagnostics)
    }

    /// Folds an input already detected (``open(_:format:diagnostics:)``) into `stacks`, with the importer of its
    /// format. `options.transforms` are not applied: apply them once all inputs are folded.
    /// Stacks already in `stacks` are other inputs': this input is folded on its own and added as ``fold(_:options:)``
    /// adds inputs, so that every command adds inputs alike (a stack whose sum over the inputs would reach 2^64
    /// loses this input's count, with a warning).
    public static func fold(_ input: DetectedInput, options: FoldOptions, into stacks: inout FoldedStacks,
                            diagnostics: inout Diagnostics) throws {
        guard stacks.count == 0 else {
            var part = FoldedStacks()
            try fold(input, options: options, into: &part, diagnostics: &diagnostics)
            merge(part, of: input.stream.name, into: &stacks, diagnostics: &diagnostics)
            return
        }
        try input.row.importStacks(input.stream, options, &stacks, &diagnostics)
    }
}
