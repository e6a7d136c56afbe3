#if canImport(Glibc)
import Glibc
#endif
import StallAnalysis

/// `stallprof symbolicate`: captures that carry their own symbols, lines and inlined frames.
enum SymbolicateCommand {
    /// What `symbolicate` is given.
    struct Run {
        var symbolicate = SymbolicateOptions()
        var output: String? = nil
    }

    static var command: Command<Run> {
        Command(
            name: "symbolicate", abstract: "captures that read the same on a machine without their binaries",
            synopsis: "[--debug-dir DIR] [-o OUT] CAPTURE ...",
            discussion: """
                Resolves every address of each capture now, from the image files named in it and their debug \
                files (found by build-id, as the other commands find them), and writes the capture with the \
                results in it: function names, source lines, inlined frames, the app's modules. Every command \
                then gives the same output from it on a machine without the binaries, and 'stallprof report' \
                says when and from which files it was symbolicated. One CAPTURE: OUT is the file to write \
                (standard output when not a terminal); several: OUT is a directory, each written there under \
                its own name. An input is changed only when -o names it. See docs/FORMAT.md.
                """,
            groups: [OptionGroup(title: "OPTIONS", options: [
                .value("--debug-dir", value: "DIR", help: "look for debug files in DIR by build-id (DIR/.build-id/"
                    + "ab/cdef.debug, DIR/NAME.debug, DIR/NAME); repeatable; also STALLPROF_DEBUG_DIRS", default:
                    "/usr/lib/debug") { $0.symbolicate.symbolizer.debugDirectories.append($1) },
                SharedOptions.output.lifted(\.output),
            ])],
            arguments: [("CAPTURE", "a capture file; - reads standard input")], defaults: Run(), body: run)
    }

    static func run(_ invocation: Invocation<Run>) throws {
        let inputs = invocation.positionals
        guard !inputs.isEmpty else { throw UsageError(message: "no capture given") }
        let output = invocation.options.output
        let directory = output.map(isDirectory) ?? false
        if inputs.count > 1 && !directory {
            throw UsageError(message: "several captures need -o DIR, an existing directory to write them to")
        }
        if !directory, output == nil || output == "-", isatty(1) != 0 {
            throw UsageError(message: "a capture is binary; give -o FILE or redirect standard output")
        }
        let targets = try inputs.map { input -> String? in
            guard directory, let output else { return output }
            guard input != "-" else { throw UsageError(message: "standard input (-) cannot be written into a directory") }
            return output + "/" + (input.split(separator: "/").last.map(String.init) ?? input)
        }
        if let twice = Dictionary(grouping: targets.compactMap { $0 }, by: { $0 }).first(where: { $0.value.count > 1 }) {
            throw UsageError(message: "two captures would both be written to \(twice.key): give them different names")
        }
        for (input, target) in zip(inputs, targets) {
            if let target, input != "-", isSameFile(input, target), directory {
                throw UsageError(message: "\(input) would be replaced by its own symbolicated copy: give another -o")
            }
            let destination = try OutputTarget(target)  // before reading, as the shell's `>`
            var diagnostics = Diagnostics()
            let bytes = try Symbolication.symbolicate(
                InputSource(path: input), options: invocation.options.symbolicate, diagnostics: &diagnostics)
            diagnostics.warnings.forEach { Output.error("stallprof: warning: \($0)") }
            try destination.finish(bytes)
        }
    }

    /// True when `path` names a directory (through symbolic links).
    private static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    /// True when `a` and `b` are one file (same device and inode).
    private static func isSameFile(_ a: String, _ b: String) -> Bool {
        var first = stat(), second = stat()
        return stat(a, &first) == 0 && stat(b, &second) == 0 && first.st_dev == second.st_dev
            && first.st_ino == second.st_ino
    }
}
