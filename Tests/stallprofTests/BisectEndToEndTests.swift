import FoundationEssentials
import StallBisect
import StallFormat
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `stallprof bisect` and `stallprof check` on the real sample apps (built by `swift build`, next to the test
/// bundle). Short windows; structural assertions only (verdicts, causes, exit codes, no process left).
@Suite(.serialized) struct BisectEndToEndTests {
    /// The directory of the built products.
    static let products = CLI.products

    static let fast = ["--window", "3", "--sustain", "0.3"]

    func scratch(_ name: String) -> String { "/tmp/stallprof-e2e-\(getpid())-\(name)" }

    func report(_ path: String) throws -> BisectReport {
        let text = try #require(readFile(path))
        return try JSONDecoder().decode(BisectReport.self, from: Data(text.utf8))
    }

    func repro(_ flags: String, _ extra: [String]) -> [String] {
        ["\(Self.products)/flag-repro", "--flags", flags, "--run-ms", "30"] + extra
    }

    @Test func bisectFindsAnAndPairAndResumesFromItsJournal() throws {
        let (json, journal) = (scratch("and.json"), scratch("and.journal"))
        defer { unlink(json); unlink(journal) }
        let flags = "a,b,c,d,e,f"
        let command = ["bisect", "--flags", flags, "--json", json, "--journal", journal] + Self.fast + ["--"]
            + repro(flags, ["--freeze-when", "b+e"])
        #expect(try run(stallprof(command)) == 0)
        let first = try report(json)
        #expect(first.verdict == .found)
        #expect(first.causes == [["b", "e"]])
        #expect(first.fixes == ["b", "e"])
        #expect(first.runs == first.trials.count && first.runs <= 25)
        #expect(first.unconsultedFlags == [])
        let resumed = ["bisect", "--flags", flags, "--json", json, "--journal", journal, "--resume"] + Self.fast
            + ["--"] + repro(flags, ["--freeze-when", "b+e"])
        #expect(try run(stallprof(resumed)) == 0)
        let second = try report(json)
        #expect(second.causes == first.causes)
        #expect(second.runs == first.runs, "every configuration came from the journal")
    }

    @Test func independentCausesInParallelRunsWithAGitHubSummary() throws {
        let (json, summary) = (scratch("or.json"), scratch("summary.md"))
        defer { unlink(json); unlink(summary) }
        let flags = "a,b,c,d,e,f"
        let command = ["bisect", "--flags", flags, "-j", "2", "--json", json] + Self.fast + ["--"]
            + repro(flags, ["--freeze-when", "a,d"])
        #expect(try run(stallprof(command), environment: ["GITHUB_STEP_SUMMARY": summary]) == 0)
        let result = try report(json)
        #expect(result.causes.sorted { $0[0] < $1[0] } == [["a"], ["d"]])
        #expect(result.fixes.isEmpty)
        #expect(result.minimalFix == ["a", "d"])
        let markdown = try #require(readFile(summary))
        #expect(markdown.contains("### stallprof bisect: found") && markdown.contains("| minimal fix | `a`, `d` |"))
    }

    @Test func crashingConfigurationsAreNeverFixes() throws {
        let json = scratch("crash.json")
        defer { unlink(json) }
        let flags = "a,b,c,d,z"
        let command = ["bisect", "--flags", flags, "--json", json] + Self.fast + ["--"]
            + repro(flags, ["--freeze-when", "c", "--crash-when-disabled", "z", "--ignore", "d"])
        #expect(try run(stallprof(command)) == 0)
        let result = try report(json)
        #expect(result.causes == [["c"]])
        #expect(result.fixes == ["c"])
        #expect(result.unconsultedFlags == ["d"])
        #expect(result.trials.contains { $0.verdict == .inconclusive })
    }

    @Test func calibrationVerdictsHaveTheirExitCodes() throws {
        let json = scratch("calibration.json")
        defer { unlink(json) }
        let never = ["bisect", "--flags", "a,b", "--json", json] + Self.fast + ["--"]
            + repro("a,b", ["--freeze-when", "a+c", "--ignore", "c"])
        #expect(try run(stallprof(never)) == 3)
        #expect(try report(json).verdict == .notReproducible)
        let always = ["bisect", "--flags", "a,b", "--json", json] + Self.fast + ["--"]
            + repro("a,b,x", ["--freeze-when", "x"])
        #expect(try run(stallprof(always)) == 4)
        #expect(try report(json).verdict == .notAttributable)
        #expect(try run(stallprof(["bisect", "--flags", "a", "--"])) == 64)
    }

    @Test func bisectErrorsEndWithTheirOwnCodesAndMessages() throws {
        let directory = scratch("journal-directory")
        #expect(mkdir(directory, 0o700) == 0)
        defer { rmdir(directory) }
        let resume = try CLI.run(["bisect", "--flags", "a", "--journal", directory, "--resume", "--", "true"], input: "")
        #expect(resume.0 == 66, "a journal to resume from that cannot be read is an input that cannot be read")
        #expect(resume.2 == "stallprof: error: \(directory): Is a directory\n")
        let foreign = scratch("foreign.journal")
        defer { unlink(foreign) }
        #expect(FileManager.default.createFile(atPath: foreign, contents: Data("{}\n".utf8)))
        let bad = try CLI.run(["bisect", "--flags", "a", "--journal", foreign, "--resume", "--", "true"], input: "")
        #expect(bad.0 == 65)
        #expect(bad.2 == "stallprof: error: \(foreign): line 1: not a stallprof bisect journal\n")
        let options = try CLI.run(["check", "--busy", "0.1", "--idle", "0.5", "--", "true"], input: "")
        #expect(options.0 == 64)
        #expect(options.2.hasPrefix("stallprof: error: the idle threshold must be at least 0 and below the busy "))
        #expect(options.2.hasSuffix("\nsee `stallprof check --help`\n"))
    }

    @Test func checkExitCodesDriveGitBisect() throws {
        let frozen = ["check"] + Self.fast + ["--"] + repro("a", ["--freeze-when", "a"])
        #expect(try run(stallprof(frozen)) == 1)
        #expect(try run(stallprof(frozen), environment: [EnvironmentName.disable: "a"]) == 0)
        let crash = ["check"] + Self.fast + ["--"] + repro("a,z", ["--freeze-when", "a", "--crash-when-disabled", "z"])
        #expect(try run(stallprof(crash), environment: [EnvironmentName.disable: "z"]) == 125)
        // A commit whose program is missing or cannot run is skipped, not called bad.
        #expect(try run(stallprof(["check"] + Self.fast + ["--", "/nonexistent/program"])) == 125)
    }

    @Test func checkCanMeasureThroughTheAppsWatchdog() throws {
        let chat = ["\(Self.products)/chat-freeze", "--chunk-ms", "3"]
        let check = ["check", "--measure", "watchdog", "--window", "5", "--"] + chat
        #expect(try run(stallprof(check)) == 1)
        #expect(try run(stallprof(check), environment: [EnvironmentName.disable: "lazy-stack"]) == 0)
        let noWatchdog = ["check", "--measure", "watchdog", "--window", "1", "--sustain", "0.3", "--"]
            + repro("a", ["--freeze-when", "a"])
        #expect(try run(stallprof(noWatchdog)) == 125, "an app without a watchdog gives no verdict")
        // An async main runs the main actor on a worker thread: only the watchdog sees its stall.
        let async = ["--sustain", "0.5", "--window", "5", "--", "\(Self.products)/stall-demo-async", "--stall-ms", "1500"]
        #expect(try run(stallprof(["check", "--measure", "watchdog"] + async)) == 1)
        #expect(try run(stallprof(["check", "--measure", "cpu"] + async)) == 0)
    }

    @Test func chatFreezeIsTheAutoscrollLazyStackInteraction() throws {
        let (json, junit) = (scratch("chat.json"), scratch("chat.xml"))
        defer { unlink(json); unlink(junit) }
        let command = ["bisect", "--flags", "autoscroll,lazy-stack,markdown-cache", "--json", json, "--junit", junit]
            + ["--window", "5", "--", "\(Self.products)/chat-freeze", "--chunk-ms", "3"]
        #expect(try run(stallprof(command)) == 0)
        let result = try report(json)
        #expect(result.causes == [["autoscroll", "lazy-stack"]])
        #expect(result.fixes == ["autoscroll", "lazy-stack"])
        #expect(!result.minimalFix.contains("markdown-cache") && result.minimalFix.count == 1)
        #expect(result.runs <= 20)
        let xml = try #require(readFile(junit))
        #expect(xml.contains("disabling autoscroll fixes the freeze") && xml.contains("failures=\"0\""))
    }

    @Test func slowButHealthyWorkIsNotAFreezeUnderLoad() throws {
        // Four CPU hogs on the 2 cores: the healthy path (60 % of every 10 ms of CPU, then a sleep, for 4 s) gets
        // CPU + run-queue wait of about a whole core, but it sleeps every period; the frozen path never sleeps.
        let hogs = CPUHogs(4)
        defer { hogs.stop() }
        #expect(hogs.groups.count == 4)
        let json = scratch("load.json")
        defer { unlink(json) }
        let command = ["bisect", "--flags", "a,b", "--json", json, "--window", "8", "--"]
            + ["\(Self.products)/flag-repro", "--flags", "a,b", "--freeze-when", "b", "--run-ms", "4000"]
            + ["--work-percent", "60"]
        #expect(try run(stallprof(command)) == 0)
        let result = try report(json)
        #expect(result.verdict == .found)
        #expect(result.causes == [["b"]])
        #expect(result.trials.contains { $0.verdict == .good && ($0.seconds ?? 0) >= 3 }, "a healthy run ran its 4 s")
    }

    @Test func chatFreezeUnderLoadIsStillTheInteraction() throws {
        let hogs = CPUHogs(4)
        defer { hogs.stop() }
        let json = scratch("chat-load.json")
        defer { unlink(json) }
        let command = ["bisect", "--flags", "autoscroll,lazy-stack,markdown-cache", "--json", json]
            + ["--window", "5", "--", "\(Self.products)/chat-freeze", "--chunk-ms", "3"]
        #expect(try run(stallprof(command)) == 0)
        let result = try report(json)
        #expect(result.causes == [["autoscroll", "lazy-stack"]])
        #expect(result.fixes == ["autoscroll", "lazy-stack"])
    }

    @Test func aSaturatedMainThreadIsFrozenAndSelfSizingIsTheCause() throws {
        // cell-height's layout loop goes across run-loop turns: no stall, but the watchdog's saturated episode.
        let json = scratch("cell-height.json")
        defer { unlink(json) }
        let command = ["bisect", "--measure", "watchdog", "--flags", "self-sizing,height-cache", "--json", json]
            + ["--window", "5", "--", "\(Self.products)/cell-height"]
        #expect(try run(stallprof(command)) == 0)
        let result = try report(json)
        #expect(result.verdict == .found)
        #expect(result.causes == [["self-sizing"]])
        #expect(result.fixes == ["self-sizing"])
        #expect(!result.minimalFix.contains("height-cache"))
        let check = ["check", "--measure", "watchdog", "--window", "5", "--", "\(Self.products)/cell-height"]
        #expect(try run(stallprof(check)) == 1)
        #expect(try run(stallprof(check), environment: [EnvironmentName.disable: "self-sizing"]) == 0)
    }

    @Test func interruptionLeavesNoProcessBehind() throws {
        let marker = "marker\(getpid())"
        let command = ["bisect", "--flags", "a,\(marker)", "--window", "20", "--sustain", "10", "--"]
            + repro("a,\(marker)", ["--freeze-when", "a"])
        let pid = try spawn(stallprof(command), environment: [:])
        var found = false
        for _ in 0..<100 where !found {
            usleep(50_000)
            found = !processes(containing: marker, besides: pid).isEmpty
        }
        #expect(found, "the child started")
        kill(pid, SIGINT)
        #expect(wait(pid) == 130)
        #expect(processes(containing: marker, besides: pid).isEmpty)
    }

    @Test func processesThatLeaveTheGroupAreKilledToo() throws {
        // `setsid ... &` escapes the run's process group (and session); the run id in its environment does not.
        // `env -i setsid sleep N &` escapes both: it is found by process tree (a child of the leader, or an orphan
        // reparented to stallprof, its subreaper). N is unique to this test: its command line is looked for.
        let marker = "escape\(getpid())"
        let seconds = "7\(getpid())"
        let bare = "sleep\u{0}\(seconds)"
        let escape = "setsid sh -c 'sleep 100; true' & env -i setsid sleep \(seconds) &"
        let frozen = ["check"] + Self.fast + ["--", "/bin/sh", "-c", "\(escape) exec \(repro("a", ["--freeze-when", "a"]).joined(separator: " "))"]
        #expect(try run(stallprof(frozen), environment: ["E2E_MARKER": marker]) == 1)
        #expect(processes(containing: marker, besides: getpid()).isEmpty, "nothing left after a frozen run")
        #expect(processes(containing: bare, besides: getpid()).isEmpty, "no env -i process left after a frozen run")
        let exits = ["check"] + Self.fast + ["--", "/bin/sh", "-c", "\(escape) sleep 0.2; exit 0"]
        #expect(try run(stallprof(exits), environment: ["E2E_MARKER": marker]) == 0)
        #expect(processes(containing: marker, besides: getpid()).isEmpty, "nothing left after a run that exited")
        #expect(processes(containing: bare, besides: getpid()).isEmpty, "no env -i process left after a run that exited")
        // Runs side by side (-j 2): each one's orphans are killed once the batch's last run is cleaned up.
        let bisect = ["bisect", "--flags", "a,b", "-j", "2"] + Self.fast
            + ["--", "/bin/sh", "-c", "\(escape) exec \(repro("a,b", ["--freeze-when", "a"]).joined(separator: " "))"]
        _ = try run(stallprof(bisect), environment: ["E2E_MARKER": marker])
        #expect(processes(containing: marker, besides: getpid()).isEmpty, "nothing left after a bisect")
        #expect(processes(containing: bare, besides: getpid()).isEmpty, "no env -i process left after a bisect")
    }

    // MARK: Helpers

    func stallprof(_ arguments: [String]) -> [String] { ["\(Self.products)/stallprof"] + arguments }

    func run(_ arguments: [String], environment: [String: String] = [:]) throws -> Int32 {
        wait(try spawn(arguments, environment: environment))
    }

    func spawn(_ arguments: [String], environment: [String: String]) throws -> pid_t {
        try CLI.spawn(arguments, environment: environment)
    }

    func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    /// Live processes (not zombies) other than `pid` whose command line or environment contains `text`.
    func processes(containing text: String, besides pid: pid_t) -> [pid_t] {
        guard let directory = opendir("/proc") else { return [] }
        defer { closedir(directory) }
        var found: [pid_t] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let other = pid_t(name), other != pid, other != getpid(),
                (readFile("/proc/\(name)/cmdline") ?? "").contains(text)
                    || (readFile("/proc/\(name)/environ") ?? "").contains(text),
                let stat = readFile("/proc/\(name)/stat"), !stat.contains(") Z ")
            else { continue }
            found.append(other)
        }
        return found
    }

    func readFile(_ path: String) -> String? {
        FileReader.text(of: path)
    }
}
