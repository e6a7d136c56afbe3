#if canImport(Glibc)
import Glibc
#endif
import StallAnalysis

/// `stallprof fold`: folded stacks from captures and from other profilers' output.
enum FoldCommand {
    static let usage = """
        USAGE: stallprof fold [--format auto|stallprof|perf|sample|folded|speedscope] [options] [-o OUT] [FILE ... | -]

        Prints folded stacks (root;...;leaf COUNT, byte-sorted), one line per distinct stack. Several inputs are
        folded together; - (or no FILE, when standard input is not a terminal) reads standard input. See
        docs/FOLD.md.

        OPTIONS:
          --format FORMAT       input format (default: auto, detected from each input's content)
          -o, --output OUT      write to OUT instead of standard output
          --demangle            readable Swift names ($s..., _$s...); perf: also repair partially demangled Rust
          --merge-recursion     collapse directly repeated frames (a;b;b;c -> a;b;c)
          --strict              unrecognized lines are an error (exit 65) instead of a warning

        \(CaptureSelection.usage)

        perf script (same names as stackcollapse-perf.pl):
          --pid                 root frame comm-PID
          --tid                 root frame comm-PID/TID
          --kernel              annotate kernel frames with _[k]
          --jit                 annotate JIT frames with _[j]
          --all                 --kernel and --jit
          --addrs               unknown symbols as [module <address>]
          --inline              annotate frames perf prints as (inlined) with _[i]
          --event-filter=EVENT  keep only this event (default: the first event type in the input)
          --count period|samples  weight samples by their period (default), or count each once
          --perl-compat         exactly stackcollapse-perf.pl, including the bugs inferno fixed (docs/FOLD.md)

        speedscope JSON (py-spy, pyinstrument, speedscope):
          --profile-names       each profile's name as a root frame (default: profiles merged, no extra root)

        macOS sample:
          --filter-waiting      drop stacks whose leaf is a waiting symbol (kept by default)
          --no-modules          frames without their module
        """

    static func run(_ arguments: [String]) throws {
        let args = try Arguments(
            arguments, valued: CaptureSelection.valued.union(["--format", "--output", "--event-filter", "--count"]),
            flags: CaptureSelection.flags.union([
                "--demangle", "--merge-recursion", "--strict", "--pid", "--tid", "--kernel", "--jit", "--all",
                "--addrs", "--inline", "--filter-waiting", "--no-modules", "--perl-compat", "--profile-names",
            ]),
            aliases: ["-o": "--output"])
        var options = try CaptureSelection.foldOptions(args)
        options.format = try args.choice("--format", as: InputFormat.self) ?? .auto

        let strict = args.flag("--strict")
        options.perf.includePID = args.flag("--pid")
        options.perf.includeTID = args.flag("--tid")
        options.perf.annotateKernel = args.flag("--kernel") || args.flag("--all")
        options.perf.annotateJIT = args.flag("--jit") || args.flag("--all")
        options.perf.includeAddresses = args.flag("--addrs")
        options.perf.markInlined = args.flag("--inline")
        options.perf.eventFilter = args.value("--event-filter")
        switch args.value("--count") {
        case nil, "period": options.perf.countSamples = false
        case "samples": options.perf.countSamples = true
        case let other?: throw UsageError(message: "--count must be period or samples, not '\(other)'")
        }
        options.perf.repairRust = args.flag("--demangle")
        options.perf.strict = strict
        options.perf.perlCompatible = args.flag("--perl-compat")
        options.sample.filterWaiting = args.flag("--filter-waiting")
        options.sample.noModules = args.flag("--no-modules")
        options.folded.strict = strict
        options.speedscope.profileRoot = args.flag("--profile-names")
        options.transforms.demangleSwift = args.flag("--demangle")
        options.transforms.mergeRecursion = args.flag("--merge-recursion")

        // No FILE: standard input when it is a pipe or a file (`perf script | stallprof fold`, as
        // stackcollapse-perf.pl); on a terminal that is almost certainly a mistake, so a usage error.
        var inputs = args.positionals
        if inputs.isEmpty {
            guard isatty(0) == 0 else { throw UsageError(message: "no input files (use - for standard input)") }
            inputs = ["-"]
        }
        let (stacks, diagnostics) = try Folder.fold(inputs.map(InputSource.init(path:)), options: options)
        diagnostics.warnings.forEach { Output.error("warning: \($0)") }
        try Output.write(stacks.renderedBytes(), to: args.value("--output"))
    }
}
