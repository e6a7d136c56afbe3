#if canImport(Glibc)
import Glibc
#endif
import StallProfiler

/// Command-line options shared by the sample apps.
public struct DemoOptions: Sendable {
    /// What kind of stall to cause. `--stall busy|blocked|sleep|flood` (flood: stall-demo only), default busy.
    public var stall = StallKind.busy
    /// How long the stall lasts. `--stall-ms N`, default 1000.
    public var stallMilliseconds = 1000
    /// Time from start to the stall, so that the watchdog has seen the main queue answer. `--delay-ms N`,
    /// default 300.
    public var delayMilliseconds = 300
    /// Capture path; overrides `STALLPROF_OUTPUT`. `--output PATH`.
    public var output: String? = nil
    /// How the main queue is serviced (stall-demo only). `--loop runloop|dispatch`, default runloop.
    public var loop = "runloop"
    /// What the lock holder does in a blocked stall. `--holder sleeps|spins`, default sleeps.
    public var holder = LockHolderMode.sleeps

    /// Parses `arguments` (without the program name); prints usage and exits 64 on a mistake.
    public static func parse(_ arguments: [String], program: String) -> DemoOptions {
        var options = DemoOptions()
        var iterator = arguments.makeIterator()
        func fail(_ message: String) -> Never {
            let usage = "usage: \(program) [--stall busy|blocked|sleep\(program == "stall-demo" ? "|flood" : "")] [--holder sleeps|spins] [--stall-ms N] [--delay-ms N]"
                + " [--output PATH]"
                + (program == "stall-demo" ? " [--loop runloop|dispatch]" : "")
            printError("\(program): \(message)\n\(usage)")
            exit(64)
        }
        while let argument = iterator.next() {
            guard let value = iterator.next() else { fail("\(argument) needs a value") }
            switch argument {
            case "--stall":
                guard let kind = StallKind(rawValue: value), kind != .flood || program == "stall-demo" else {
                    fail("unknown stall kind \(value)")
                }
                options.stall = kind
            case "--stall-ms":
                guard let ms = Int(value), ms > 0 else { fail("bad --stall-ms \(value)") }
                options.stallMilliseconds = ms
            case "--delay-ms":
                guard let ms = Int(value), ms >= 0 else { fail("bad --delay-ms \(value)") }
                options.delayMilliseconds = ms
            case "--output": options.output = value
            case "--holder":
                guard let mode = LockHolderMode(rawValue: value) else { fail("unknown holder \(value)") }
                options.holder = mode
            case "--loop" where program == "stall-demo":
                guard value == "runloop" || value == "dispatch" else { fail("unknown loop \(value)") }
                options.loop = value
            default: fail("unknown option \(argument)")
            }
        }
        return options
    }

    /// Starts the watchdog from `--output` or the environment; exits 1 with the reason when that fails.
    public func startWatchdog() -> StallWatchdog? {
        if let output {
            do { return try StallWatchdog.start(StallWatchdog.Configuration(outputPath: output)) } catch {
                printError("error: \(error)")
                exit(1)
            }
        }
        return Self.startWatchdogFromEnvironment()
    }

    /// Starts the watchdog the environment describes (`STALLPROF_OUTPUT`; nil when unset); exits 1 with the reason,
    /// on standard error, when that fails.
    public static func startWatchdogFromEnvironment() -> StallWatchdog? {
        do { return try StallWatchdog.startFromEnvironment() } catch {
            printError("error: \(error)")
            exit(1)
        }
    }

    /// Causes the configured stall on the calling thread (the main queue's), then calls `finish`. A flood returns
    /// at once and calls `finish` from a main-queue block enqueued after its last block.
    public func stallNow(then finish: @escaping @Sendable () -> Void) {
        if stall == .flood {
            FloodWork.start(milliseconds: stallMilliseconds, then: finish)
            return
        }
        stallNow()
        finish()
    }

    /// Causes the configured stall on the calling thread (a flood only starts: see ``stallNow(then:)``).
    public func stallNow() {
        switch stall {
        case .flood: FloodWork.start(milliseconds: stallMilliseconds) {}
        case .busy: _ = BusyWork.spin(milliseconds: stallMilliseconds)
        case .blocked:
            // The holder measured its own hold: a sleep cut short means someone interrupted it (EINTR).
            let report = BlockedWork.waitForWorkerLock(milliseconds: stallMilliseconds, holder: holder)
            printError("\(BlockedWork.holderThreadName) \(report.mode.rawValue): held \(report.heldNs / 1_000_000) ms of \(report.askedNs / 1_000_000) ms"
                + (report.cutShort ? ", cut short" : ""))
            if report.cutShort { exit(70) }
        case .sleep:
            let (slept, cutShort) = SleepWork.sleep(milliseconds: stallMilliseconds)
            printError("main thread slept \(slept / 1_000_000) ms of \(stallMilliseconds) ms" + (cutShort ? ", cut short" : ""))
            if cutShort { exit(70) }
        }
    }
}

/// Writes a line to standard error.
func printError(_ line: String) {
    let text = line + "\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
}
