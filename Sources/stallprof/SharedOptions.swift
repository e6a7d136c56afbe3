import StallAnalysis

/// The option groups several commands share, each declared once and lifted into every command that takes it.
enum SharedOptions {
    /// `-o, --output OUT`.
    static var output: Option<String?> {
        .text("-o", "--output", value: "OUT", help: "write to OUT instead of standard output") { $0 = $1 }
    }

    /// Which episodes and samples of a capture are kept: every command that reads captures.
    static var captureSelection: OptionGroup<StallCaptureImporter.Options> {
        OptionGroup(title: "CAPTURES", options: [
            .choice("--kind", value: "KIND", help: "keep stalls (the main queue did not answer) or saturated "
                + "episodes (it answered but its thread never rested)", default: EpisodeKindFilter.all) { $0.selection.kind = $1 },
            .choice("--state", value: "STATE", help: "keep busy or blocked episodes",
                    default: StallStateFilter.all) { $0.selection.state = $1 },
            .value("--stall", value: "N", help: "keep only episode number N; repeatable", default: "every episode") {
                options, raw in
                guard let id = UInt32(raw), id > 0 else {
                    throw UsageError(message: "--stall takes an episode number, not '\(raw)'")
                }
                options.selection.stallIDs.insert(id)
            },
            .value("--target", value: "NAME", help: "keep only episodes of the watched target NAME (main: the main "
                + "queue; others as the app named them, e.g. loop-0, db-queue); repeatable", default: "every target") {
                options, raw in
                options.selection.targets.insert(try targetName(raw))
            },
            .value("--range", value: "FROM..TO", help: "keep samples taken FROM to TO milliseconds after their "
                + "episode began (FROM-TO too; either end may be left out)", default: "the whole episode") {
                options, raw in
                guard let window = CaptureSelection.window(milliseconds: raw) else {
                    throw UsageError(message: "--range takes FROM..TO in milliseconds, not '\(raw)'")
                }
                options.selection.window = window
            },
        ] + captureNames.options.map { $0.lifted(\.symbolizer) })
    }

    /// `--target`'s value: a watched target's name, never empty (a capture holds no target without a name).
    static func targetName(_ raw: String) throws -> String {
        guard !raw.isEmpty else { throw UsageError(message: "--target takes a target's name (main for the main queue)") }
        return raw
    }

    /// How a capture's names read.
    static var captureNames: OptionGroup<SymbolizerOptions> {
        OptionGroup(title: "CAPTURE NAMES", options: [
            .flag("--simplify-names", help: "short Swift names (static BusyWork.descend(_:until:)) when the "
                + "toolchain's libswiftDemangle.so is found") { $0.simplifyNames = true },
            .flag("--offsets", help: "append +0xOFFSET to resolved function names") { $0.showOffsets = true },
            .flag("--no-demangle", help: "keep Swift symbols mangled") { $0.demangle = false },
            .value("--debug-dir", value: "DIR", help: "look for debug files in DIR by build-id (DIR/.build-id/ab/"
                + "cdef.debug, DIR/NAME.debug, DIR/NAME) for images missing, rebuilt or stripped; repeatable; "
                + "also STALLPROF_DEBUG_DIRS (colon-separated)", default: "/usr/lib/debug") {
                $0.debugDirectories.append($1)
            },
        ])
    }

    /// How every input is read and rewritten: fold, flamegraph, diff, export and report. `formatName` is `--format`,
    /// except for export, whose `--format` is the output's.
    static func input(formatName: String = "--format") -> OptionGroup<FoldOptions> {
        OptionGroup(title: "INPUT", options: [
            .choice(formatName, value: "FORMAT", help: "input format, detected from each input's content "
                + "by default", default: InputFormat.auto) { $0.format = $1 },
            .flag("--strict", help: "unrecognized lines are an error (exit 65) instead of a warning") {
                $0.perf.strict = true
                $0.folded.strict = true
            },
            .flag("--demangle", help: "readable Swift names ($s..., _$s...); perf: also repair partially "
                + "demangled Rust") {
                $0.transforms.demangleSwift = true
                $0.perf.repairRust = true
            },
            .flag("--merge-recursion", help: "collapse directly repeated frames (a;b;b;c -> a;b;c)") {
                $0.transforms.mergeRecursion = true
            },
            .flag("--inline", help: "inlined functions as frames of their own, marked _[i]: captures from DWARF, "
                + "perf those it prints as (inlined)") {
                $0.perf.markInlined = true
                $0.capture.symbolizer.inlines = true
            },
            .value("--names", value: "STYLE", help: "full: names as the demangler writes them; short: Swift "
                + "names as Xcode shows them (BusyWork.burn(until:))", default: "full; report's text: short") {
                options, raw in
                guard let style = NameStyle(rawValue: raw) else {
                    throw UsageError(message: "--names takes full or short, not '\(raw)'")
                }
                options.names = style
            },
            .flag("--lines", help: "captures: each frame's source line where its image has DWARF, "
                + "function:File.swift:66 (flamegraph: in each frame's tooltip, frames kept whole)") {
                $0.capture.symbolizer.lines = true
            },
        ])
    }

    /// perf script's options (stackcollapse-perf.pl's names).
    static var perf: OptionGroup<PerfScriptImporter.Options> {
        OptionGroup(title: "PERF SCRIPT (stackcollapse-perf.pl's names)", options: [
            .flag("--pid", help: "root frame comm-PID") { $0.includePID = true },
            .flag("--tid", help: "root frame comm-PID/TID") { $0.includeTID = true },
            .flag("--kernel", help: "annotate kernel frames with _[k]") { $0.annotateKernel = true },
            .flag("--jit", help: "annotate JIT frames with _[j]") { $0.annotateJIT = true },
            .flag("--all", help: "--kernel and --jit") {
                $0.annotateKernel = true
                $0.annotateJIT = true
            },
            .flag("--addrs", help: "unknown symbols as [module <address>]") { $0.includeAddresses = true },
            .text("--skip-after", value: "FUNCTION", help: "drop the callers of the leaf-most frame named FUNCTION "
                + "(inferno's; repeatable): stacks that perf unwound differently above it merge") {
                $0.skipAfter.insert($1)
            },
            .text("--event-filter", value: "EVENT", help: "keep only this event",
                  default: "the first event type in the input") { $0.eventFilter = $1 },
            .choice("--count", value: "COUNT", help: "weight samples by their period, or count each once",
                    default: PerfCount.period) { $0.countSamples = $1 == .samples },
            .flag("--perl-compat", help: "exactly stackcollapse-perf.pl, including the bugs inferno fixed "
                + "(docs/FOLD.md)") { $0.perlCompatible = true },
        ])
    }

    /// What `--count` weighs perf samples by.
    enum PerfCount: String, CaseIterable {
        case period, samples
    }

    /// The other formats' options: speedscope JSON and macOS sample.
    static var otherFormats: OptionGroup<FoldOptions> {
        OptionGroup(title: "OTHER FORMATS (speedscope JSON, macOS sample)", options: [
            .flag("--profile-names", help: "speedscope: each profile's name as a root frame (by default the "
                + "profiles are merged, no extra root)") { $0.speedscope.profileRoot = true },
            .flag("--filter-waiting", help: "sample: drop stacks whose leaf is a waiting symbol (kept by default)") {
                $0.sample.filterWaiting = true
            },
            .flag("--no-modules", help: "sample: frames without their module") { $0.sample.noModules = true },
        ])
    }

    /// Every group that reads inputs, lifted into a command whose input options `path` names.
    static func reading<Root>(_ path: WritableKeyPath<Root, FoldOptions>, formatName: String = "--format")
        -> [OptionGroup<Root>]
    {
        [
            input(formatName: formatName).lifted(path),
            captureSelection.lifted(path.appending(path: \.capture)),
            perf.lifted(path.appending(path: \.perf)),
            otherFormats.lifted(path),
        ]
    }
}
