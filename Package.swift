// swift-tools-version:6.0
import PackageDescription

// Dependency arrows point one way:
//   CStallCapture <- StallProfiler <- samples
//   StallFormat <- StallProfiler, StallAnalysis, StallBisect
//   CStallProcess <- StallBisect
//   StallAnalysis, StallBisect, CStallOutput <- stallprof (CLI)
// StallAnalysis never imports capture code and runs no process; StallBisect (bisect, check) runs them.
/// The C targets' one definition of `_GNU_SOURCE`.
let gnuSource: [CSetting] = [.define("_GNU_SOURCE")]

let package = Package(
    name: "stallprof",
    products: [
        .library(name: "StallProfiler", targets: ["StallProfiler"]),
        .executable(name: "stallprof", targets: ["stallprof"]),
        // `swift package stallprof ARGUMENTS`, here and in any package that depends on this one.
        .plugin(name: "StallprofCommand", targets: ["StallprofCommand"]),
        .executable(name: "stall-demo", targets: ["stall-demo"]),
        .executable(name: "stall-demo-async", targets: ["stall-demo-async"]),
        .executable(name: "stallprof-bench-capture", targets: ["stallprof-bench-capture"]),
        .executable(name: "stallprof-bench-bisect", targets: ["stallprof-bench-bisect"]),  // bisect
        .executable(name: "stallprof-bench-blocked", targets: ["stallprof-bench-blocked"]),  // who holds the lock
        .executable(name: "flag-repro", targets: ["flag-repro"]),  // bisect
        .executable(name: "chat-freeze", targets: ["chat-freeze"]),  // bisect
        .executable(name: "cell-height", targets: ["cell-height"]),  // saturated main thread
        .executable(name: "watchdog-trials", targets: ["watchdog-trials"]),  // a small stack, fork
        .executable(name: "long-press", targets: ["long-press"]),  // app markers on the timeline
        .executable(name: "wait-shapes", targets: ["wait-shapes"]),  // what a blocked main thread waits for
        .executable(name: "event-loop", targets: ["event-loop"]),  // a blocked and a busy event loop (targets)
        .executable(name: "pool-starvation", targets: ["pool-starvation"]),  // blocking waits starve the pool
        .library(name: "ChatUI", targets: ["ChatUI"]),  // a dependency's module for dependency-loop
        .executable(name: "dependency-loop", targets: ["dependency-loop"]),  // a freeze inside a dependency
        .executable(name: "stallprof-bench-markers", targets: ["stallprof-bench-markers"]),  // StallMarker cost
        .executable(name: "stallprof-bench-snapshot", targets: ["stallprof-bench-snapshot"]),  // thread snapshot cost
        .executable(name: "stallprof-bench-symbolize", targets: ["stallprof-bench-symbolize"]),  // lines vs llvm-symbolizer
    ],
    targets: [
        // Every C target is built with glibc's GNU extensions (process_vm_readv, pipe2, pthread_setname_np,
        // RTLD_DEFAULT...): `_GNU_SOURCE` is defined here (gnuSource), never in a source file.
        .target(name: "CStallCapture", cSettings: gnuSource),
        .target(name: "StallFormat"),
        .target(name: "StallProfiler", dependencies: ["CStallCapture", "StallFormat"]),
        // The flame graph's script is FlameGraph/FlameGraphScript.js, compiled in by the EmbedText plugin.
        // The Swift runtime's demangler by a link-time reference (found in static builds too).
        .target(name: "CSwiftDemangle", cSettings: gnuSource),
        // zlib (the system library, Debian's zlib1g-dev): gzip input read transparently, pprof compressed.
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", providers: [.apt(["zlib1g-dev"])]),
        // Source lines and inlined frames from DWARF, through elfutils' libdw (dlopen'd: lines only where it is).
        .target(name: "CStallDwarf", cSettings: gnuSource, linkerSettings: [.linkedLibrary("dl")]),
        .target(
            name: "StallAnalysis", dependencies: ["StallFormat", "CSwiftDemangle", "CZlib", "CStallDwarf"],
            plugins: ["EmbedText"]),
        .executableTarget(name: "stallprof-embed-text", path: "tools/embed-text"),
        .plugin(name: "EmbedText", capability: .buildTool(), dependencies: ["stallprof-embed-text"]),
        // Child subreaper for bisect's process runner (not capture code).
        .target(name: "CStallProcess", cSettings: gnuSource),
        .target(name: "StallBisect", dependencies: ["StallFormat", "CStallProcess"]),
        // -o's temporary file and the async-signal-safe handler that removes it on SIGINT, SIGTERM, SIGHUP.
        .target(name: "CStallOutput", cSettings: gnuSource),
        .executableTarget(
            name: "stallprof", dependencies: ["StallAnalysis", "StallBisect", "StallFormat", "CStallOutput"]),
        .plugin(
            name: "StallprofCommand",
            capability: .command(intent: .custom(
                verb: "stallprof", description: "Runs the stallprof CLI (fold, flamegraph, report, export, bisect, ...)")),
            dependencies: ["stallprof"]),

        // Example stalling apps (samples/): used by the tests, the demo and the docs.
        .target(name: "StallSamples", dependencies: ["StallProfiler"], path: "samples/StallSamples"),
        .executableTarget(name: "stall-demo", dependencies: ["StallSamples"], path: "samples/stall-demo"),
        .executableTarget(
            name: "stall-demo-async", dependencies: ["StallSamples"], path: "samples/stall-demo-async"),
        // Bisect: a tiny app that freezes when given flag groups are enabled (end-to-end tests).
        .executableTarget(name: "flag-repro", dependencies: ["StallProfiler"], path: "samples/flag-repro"),
        // Bisect: the post-mortem's chat app; freezes when autoscroll and lazy-stack are both on.
        .executableTarget(name: "chat-freeze", dependencies: ["StallProfiler"], path: "samples/chat-freeze"),
        // A layout loop across run-loop turns (saturated, never stalled); flags self-sizing, height-cache.
        .executableTarget(name: "cell-height", dependencies: ["StallProfiler"], path: "samples/cell-height"),
        // A main thread with ~8 KiB of stack left when sampled; a watchdog started in a forked child.
        .executableTarget(
            name: "watchdog-trials", dependencies: ["StallSamples"], path: "samples/watchdog-trials"),
        // A long-press callback that runs while the finger is down and stalls; touches marked.
        .executableTarget(name: "long-press", dependencies: ["StallProfiler"], path: "samples/long-press"),
        // The main thread waits: a mutex, DispatchQueue.sync, a semaphore, a condition, join, I/O, a deadlock...
        .executableTarget(name: "wait-shapes", dependencies: ["StallProfiler"], path: "samples/wait-shapes"),
        .executableTarget(name: "event-loop", dependencies: ["StallSamples"], path: "samples/event-loop"),
        .executableTarget(name: "pool-starvation", dependencies: ["StallSamples"], path: "samples/pool-starvation"),
        // A tiny UI framework (its own module), and an app whose freeze is inside it: app code by module.
        .target(name: "ChatUI", path: "samples/ChatUI"),
        .executableTarget(
            name: "dependency-loop", dependencies: ["StallProfiler", "ChatUI"], path: "samples/dependency-loop"),

        // Benchmarks (driven by scripts in tools/).
        .executableTarget(
            name: "stallprof-bench-capture",
            dependencies: ["CStallCapture", "StallProfiler", "StallSamples"],
            path: "tools/bench-capture"
        ),
        // Who holds the lock: what one blocked-on probe costs.
        .executableTarget(
            name: "stallprof-bench-blocked", dependencies: ["CStallCapture", "StallSamples"], path: "tools/bench-blocked"),
        // What a StallMarker call costs and whether it allocates (tools/bench-markers.sh).
        .executableTarget(
            name: "stallprof-bench-markers", dependencies: ["StallProfiler", "StallFormat"], path: "tools/bench-markers",
            exclude: ["count-allocations.c"]),
        // What a snapshot of every thread costs (tools/bench-snapshot.sh).
        .executableTarget(name: "stallprof-bench-snapshot", dependencies: ["StallProfiler"], path: "tools/bench-snapshot"),
        // Source lines: a capture's addresses for llvm-symbolizer (tools/bench-symbolize.sh).
        .executableTarget(name: "stallprof-bench-symbolize", dependencies: ["StallFormat"], path: "tools/bench-symbolize"),
        // Bisect: run counts of the search on simulated repros.
        .executableTarget(name: "stallprof-bench-bisect", dependencies: ["StallBisect"], path: "tools/bench-bisect"),

        .testTarget(name: "StallFormatTests", dependencies: ["StallFormat"], exclude: ["Fixtures"]),
        .testTarget(
            name: "StallProfilerTests",
            dependencies: ["StallProfiler", "StallFormat", "StallAnalysis", "CStallCapture", "StallSamples", "CUnwindCheck"]
        ),
        // Compares the capture handler's unwinder with libgcc's at random interruption points (tests only).
        .target(
            name: "CUnwindCheck", dependencies: ["CStallCapture"], path: "Tests/CUnwindCheck", cSettings: gnuSource),
        .testTarget(
            name: "StallAnalysisTests", dependencies: ["StallAnalysis", "StallFormat", "StallTestSupport"],
            resources: [.copy("Fixtures")]),
        .testTarget(name: "StallBisectTests", dependencies: ["StallBisect", "StallFormat"]),
        // Synthetic captures and an SVG reader shared by the analysis and the CLI tests.
        .target(name: "StallTestSupport", dependencies: ["StallAnalysis", "StallFormat"], path: "Tests/StallTestSupport"),
        // The CLI tests: run the built stallprof (and the sample apps it analyzes) as a user does.
        .testTarget(
            name: "stallprofTests",
            dependencies: [
                "stallprof", "stall-demo", "stall-demo-async", "chat-freeze", "flag-repro", "cell-height", "dependency-loop",
                "wait-shapes", "event-loop", "pool-starvation",
                "StallAnalysis", "StallBisect", "StallFormat",
                "StallTestSupport",
            ]),
    ]
)
