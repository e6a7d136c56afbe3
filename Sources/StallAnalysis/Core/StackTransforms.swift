/// Frame-level rewrites applied to folded stacks after import, whatever the input format.
public struct StackTransforms: Sendable {
    /// `--demangle`: mangled Swift symbols (`$s...`, `_$s...`) become readable names. Default: false.
    public var demangleSwift = false
    /// `--merge-recursion`: directly repeated frames (`a;b;b;b;c`) become one (`a;b;c`), like
    /// stackcollapse-recursive. Default: false.
    public var mergeRecursion = false
    /// `--names short`: demangled Swift names read short (``ShortNames``). Default: `.full`, as the demangler
    /// writes them.
    public var names = NameStyle.full

    /// Creates the default (no rewriting).
    public init() {}

    /// True when there is nothing to do.
    public var isIdentity: Bool { !demangleSwift && !mergeRecursion && names == .full }

    /// The annotations stackcollapse-perf.pl appends, kept outside the demangled name.
    static let annotations = ["_[k]", "_[j]", "_[i]"]

    /// `stacks` rewritten; each distinct stack is rewritten once, so the cost follows the number of distinct stacks.
    /// Counts stay exact; stacks that become one add up, and one whose sum would reach 2^64 keeps the count it had
    /// and drops the rest with a warning in `diagnostics` (never a wrong number).
    public func apply(to stacks: FoldedStacks, diagnostics: inout Diagnostics) -> FoldedStacks {
        guard !isIdentity else { return stacks }
        var result = FoldedStacks()
        result.unit = stacks.unit
        var cache: [Substring: String] = [:]
        // A frame's source follows it to its new name.
        result.frameSources = Dictionary(stacks.frameSources.map { (rewrite($0.key, cache: &cache), $0.value) }) { kept, _ in kept }
        var dropped: [String] = []
        stacks.forEachExact { bytes, whole, fraction in
            var rewritten = rewrite(String(decoding: bytes, as: UTF8.self), cache: &cache)
            let added = rewritten.withUTF8 {
                result.add(bytes: UnsafeRawBufferPointer($0), whole: whole, fraction: fraction) != nil
            }
            if !added { dropped.append(rewritten) }
        }
        for stack in dropped.prefix(UnrecognizedLines.shownLines) {
            let shown = stack.count > 120 ? stack.prefix(120) + "..." : Substring(stack)
            diagnostics.warn("dropped a count of '\(shown)' after --demangle or --merge-recursion: the stack's count "
                + "would exceed 2^64-1")
        }
        if dropped.count > UnrecognizedLines.shownLines {
            diagnostics.warn("... and \(dropped.count - UnrecognizedLines.shownLines) more such counts dropped")
        }
        return result
    }

    /// `stacks` in their order, each rewritten (the flame graph's folded input, which keeps order and before
    /// counts).
    public func apply(to stacks: [WeightedStack]) -> [WeightedStack] {
        guard !isIdentity else { return stacks }
        var cache: [Substring: String] = [:]
        return stacks.map { entry in
            var rewritten = entry
            rewritten.stack = rewrite(entry.stack, cache: &cache)
            return rewritten
        }
    }

    /// One folded stack rewritten; `cache` remembers demangled frames.
    func rewrite(_ text: String, cache: inout [Substring: String]) -> String {
        rewrite(frames: text.split(separator: ";", omittingEmptySubsequences: false).map(String.init), cache: &cache)
            .joined(separator: ";")
    }

    /// One stack's frames (root first) rewritten, as ``rewrite(_:cache:)`` rewrites a folded stack: a frame's new
    /// name may depend on its neighbour (a closure's forwarder, `--demangle`), and `--merge-recursion` merges frames.
    func rewrite(frames: [String], cache: inout [Substring: String]) -> [String] {
        var frames = frames
        if demangleSwift {
            frames = frames.map { frame in
                if let known = cache[Substring(frame)] { return known }
                let readable = Self.demangled(frame)
                cache[Substring(frame)] = readable
                return readable
            }
            Symbolizer.showForwardedClosures(&frames)
        }
        if names == .short {
            frames = frames.map { frame in
                let key = Substring("\u{1}" + frame)  // apart from the demangled names in the same cache
                if let known = cache[key] { return known }
                let short = ShortNames.short(frame)
                cache[key] = short
                return short
            }
        }
        if mergeRecursion {
            var merged: [String] = []
            for frame in frames where merged.last != frame { merged.append(frame) }
            frames = merged
        }
        return frames
    }

    /// One frame demangled, an annotation suffix and a PLT stub's `@plt` kept after the readable name and a
    /// `module`` prefix (macOS `sample`) before it; `;` in the result becomes `:`.
    static func demangled(_ frame: String) -> String {
        var name = Substring(frame)
        var prefix = ""
        if let tick = name.firstIndex(of: "`") {
            prefix = String(name[...tick])
            name = name[name.index(after: tick)...]
        }
        var suffix = ""
        if let annotation = annotations.first(where: { frame.hasSuffix($0) }) {
            name = name.dropLast(annotation.count)
            suffix = annotation
        }
        if name.hasSuffix("@plt") {  // a PLT stub, named after the function it jumps to
            name = name.dropLast(4)
            suffix = "@plt" + suffix
        }
        guard let readable = SwiftDemangler.demangle(String(name)) else { return frame }
        return prefix + String(readable.map { $0 == ";" ? ":" : $0 }) + suffix
    }
}
