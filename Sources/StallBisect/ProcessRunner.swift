import StallFormat
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// stallprof was asked to stop (SIGINT or SIGTERM); every child process group has been killed.
public struct RunInterrupted: Error, CustomStringConvertible {
    /// The signal received.
    public var signal: Int32
    /// A sentence for standard error.
    public var description: String { "interrupted by signal \(signal); every child process was killed" }
}

/// Starts commands in process groups of their own, measures the CPU time of each one's main thread (the thread
/// whose id is the process id) from /proc, and kills whole groups: on a verdict, on timeout and on interruption,
/// and with them what each run left outside its group (``ProcessReaper``; this process becomes a subreaper).
public enum ProcessRunner {
    /// One command to start: argument vector (the first is found on PATH) and extra environment variables.
    public struct Launch: Sendable {
        /// The command and its arguments; executed directly, no shell.
        public var arguments: [String]
        /// Variables set (or replaced) in the caller's environment.
        public var environment: [String: String]
        /// Keep the child's standard output and error (true) or send them to /dev/null (false).
        public var inheritOutput: Bool

        /// Creates a launch description.
        public init(arguments: [String], environment: [String: String] = [:], inheritOutput: Bool = false) {
            self.arguments = arguments
            self.environment = environment
            self.inheritOutput = inheritOutput
        }
    }

    /// Seconds to wait after SIGTERM before SIGKILL.
    public static let killGraceSeconds = 1.0

    private static let interruption = Atomic<Int32>(0)

    /// Makes SIGINT and SIGTERM stop the runs in progress (their groups are killed) instead of killing
    /// stallprof outright; runs then throw ``RunInterrupted``.
    public static func installInterruptHandlers() {
        for signal in [SIGINT, SIGTERM] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { ProcessRunner.interruption.store($0, ordering: .relaxed) }
            sigemptyset(&action.sa_mask)
            sigaction(signal, &action, nil)
        }
        // A parent may have left them blocked (the mask is inherited across exec).
        var mask = sigset_t()
        sigemptyset(&mask)
        sigaddset(&mask, SIGINT)
        sigaddset(&mask, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &mask, nil)
    }

    /// Runs every launch at once, each classified by its own classifier, and returns one observation each, in
    /// order. Each child is killed (with its group) as soon as its verdict is certain.
    public static func run(_ launches: [Launch], options: RunClassifierOptions) throws -> [BisectObservation] {
        ProcessReaper.becomeSubreaper()
        var children: [Child] = []
        defer {
            children.forEach { $0.killGroup() }
            ProcessReaper.killLeftovers(runID: nil)  // the batch's orphans, unless runs of another batch go on
        }
        for launch in launches { children.append(try Child(launch, options: options)) }
        let start = monotonicSeconds()
        while children.contains(where: { $0.observation == nil }) {
            sleepSeconds(options.intervalSeconds)
            let signal = interruption.load(ordering: .relaxed)
            if signal != 0 { throw RunInterrupted(signal: signal) }
            let now = monotonicSeconds() - start
            for index in children.indices where children[index].observation == nil {
                children[index].poll(at: now)
            }
        }
        return children.map { $0.observation! }
    }

    static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    static func sleepSeconds(_ seconds: Double) {
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        _ = nanosleep(&request, nil)  // a signal cuts it short, which is what interruption wants
    }
}

/// One running child process and what is known of it.
private final class Child {
    let pid: pid_t
    let capturePath: String?
    /// The run id in the child's environment: what it leaves outside its group is found by it.
    let runID = ProcessReaper.newRunID()
    var classifier: RunClassifier
    var observation: BisectObservation?
    var reaped = false
    /// The longest wait for a CPU of any of the child's threads seen so far, seconds (`--measure watchdog`).
    var mostWait = 0.0
    /// Set once the group has been killed: killing it again would wait out another grace period for zombies and
    /// could signal an unrelated group that reused the id.
    private var killed = false

    init(_ launch: ProcessRunner.Launch, options: RunClassifierOptions) throws {
        classifier = RunClassifier(options: options)
        capturePath = options.measure == .watchdog ? launch.environment[EnvironmentName.output] : nil
        var launch = launch
        launch.environment[ProcessReaper.variable] = runID
        pid = try spawn(launch)
        ProcessReaper.started(leader: pid)
    }

    /// Measures the main thread, reaps the child if it ended, and settles the verdict when it is certain.
    func poll(at seconds: Double) {
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid {
            reaped = true
            let exited = status & 0x7f == 0
            let code = exited ? (status >> 8) & 0xff : nil
            let detail = exited ? "exit \(code!)" : "signal \(status & 0x7f)"
            finish(classifier.verdictAtExit(status: code), seconds: seconds, detail: detail)
            return
        }
        let verdict: RunVerdict?
        if let capturePath {
            // The thread that services the main queue may be any of them (a worker under dispatchMain()): the
            // window is stretched by the longest wait for a CPU among them.
            mostWait = max(mostWait, longestThreadWait(pid) ?? 0)
            verdict = classifier.record(
                seconds: seconds, capture: try? CaptureReader.read(path: capturePath), waitSeconds: mostWait)
        } else {
            guard let times = mainThreadTimes(pid) else {
                // The first thread is gone (it called pthread_exit) while the process lives: no verdict.
                if classifier.windowIsOver(seconds: seconds, waitSeconds: 0) {
                    finish(.inconclusive, seconds: seconds, detail: "main thread not measurable")
                }
                return
            }
            verdict = classifier.record(
                seconds: seconds, cpuSeconds: times.cpu, waitSeconds: times.wait,
                voluntarySwitches: mainThreadSleeps(pid))
        }
        if let verdict {
            finish(verdict, seconds: seconds, detail: verdict == .frozen ? "frozen" : "window elapsed")
        }
    }

    private func finish(_ verdict: RunVerdict, seconds: Double, detail: String) {
        observation = BisectObservation(
            verdict, mainThreadCPU: classifier.recentCPU().map { ($0 * 100).rounded() / 100 },
            seconds: (seconds * 100).rounded() / 100, detail: detail)
        killGroup()
    }

    /// Kills the child's process group: SIGTERM, then SIGKILL after the grace period; reaps the child; then kills
    /// and reaps what the run left outside its group (``ProcessReaper``).
    func killGroup() {
        guard !killed else { return }
        killed = true
        // While the leader is unreaped its pid is ours and its descendants are linked to it; once it is reaped they
        // are orphans of ours, left to ProcessReaper.
        let tree = reaped ? [:] : ProcessReaper.descendants(of: pid)
        if groupExists() {
            kill(-pid, SIGTERM)
            let deadline = ProcessRunner.monotonicSeconds() + ProcessRunner.killGraceSeconds
            while groupExists() && ProcessRunner.monotonicSeconds() < deadline {
                reap()
                ProcessRunner.sleepSeconds(0.01)
            }
            if groupExists() { kill(-pid, SIGKILL) }
        }
        if !reaped {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            reaped = true
        }
        ProcessReaper.killLeftovers(runID: runID, tree: tree, leader: pid)
    }

    private func reap() {
        var status: Int32 = 0
        if !reaped && waitpid(pid, &status, WNOHANG) == pid { reaped = true }
    }

    /// True while any process of the group lives (an unreaped leader counts: it is still a zombie member).
    private func groupExists() -> Bool { kill(-pid, 0) == 0 || errno == EPERM }
}

/// Starts `launch` in a new process group with default signal dispositions and an empty signal mask.
private func spawn(_ launch: ProcessRunner.Launch) throws -> pid_t {
    guard let program = launch.arguments.first else { throw StallError.usage("no command to run") }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    posix_spawnattr_setpgroup(&attributes, 0)
    var none = sigset_t()
    sigemptyset(&none)
    posix_spawnattr_setsigmask(&attributes, &none)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in [SIGINT, SIGTERM, SIGPIPE, SIGPROF] { sigaddset(&defaults, signal) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    if !launch.inheritOutput {
        // A run in a background process group that read the terminal would stop (SIGTTIN) at 0 % CPU and pass for
        // "good": it reads nothing instead.
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    }
    var environment: [String: String] = [:]
    var cursor = environ
    while let entry = cursor.pointee {
        let text = String(cString: entry)
        if let equals = text.firstIndex(of: "=") {
            environment[String(text[..<equals])] = String(text[text.index(after: equals)...])
        }
        cursor += 1
    }
    environment.merge(launch.environment) { $1 }
    let argv = launch.arguments.map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { (argv + envp).forEach { free($0) } }
    var pid: pid_t = 0
    let result = posix_spawnp(&pid, program, &actions, &attributes, argv, envp)
    guard result == 0 else {
        throw StallError.cannotRun(program: program, reason: "cannot run: \(String(cString: strerror(result)))")
    }
    return pid
}

/// CPU time used so far by the main thread (tid == pid) of `pid`, and the time it waited runnable for a CPU, in
/// seconds: from schedstat (nanoseconds), else CPU time from stat's utime + stime (clock ticks) and no wait.
/// Nil when the thread is gone.
func mainThreadTimes(_ pid: pid_t) -> (cpu: Double, wait: Double)? {
    if let text = FileReader.text(of: "/proc/\(pid)/task/\(pid)/schedstat") {
        let fields = text.split(separator: " ").compactMap { Double($0.trimmingPrefix(" ")) }
        if fields.count >= 2 { return (fields[0] / 1e9, fields[1] / 1e9) }
    }
    guard let text = FileReader.text(of: "/proc/\(pid)/task/\(pid)/stat"), let close = text.lastIndex(of: ")") else { return nil }
    let fields = text[text.index(after: close)...].split(separator: " ")
    // After the command name: state is field 3, utime 14 and stime 15 (1-based over the whole line).
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
    return ((user + system) / Double(sysconf(Int32(_SC_CLK_TCK))), 0)
}

/// The longest total wait for a CPU (schedstat) among the threads of `pid`, seconds; nil when none is readable.
func longestThreadWait(_ pid: pid_t) -> Double? {
    guard let directory = opendir("/proc/\(pid)/task") else { return nil }
    defer { closedir(directory) }
    var longest: Double? = nil
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        guard let tid = Int32(name), let text = FileReader.text(of: "/proc/\(pid)/task/\(tid)/schedstat") else { continue }
        let fields = text.split(separator: " ")
        if fields.count >= 2, let wait = Double(fields[1]) { longest = max(longest ?? 0, wait / 1e9) }
    }
    return longest
}

/// How many times the main thread of `pid` has slept voluntarily (`voluntary_ctxt_switches` in its /proc status);
/// nil when unknown.
func mainThreadSleeps(_ pid: pid_t) -> Int? {
    guard let text = FileReader.text(of: "/proc/\(pid)/task/\(pid)/status"),
        let line = text.split(separator: "\n").first(where: { $0.hasPrefix("voluntary_ctxt_switches:") })
    else { return nil }
    return Int(line.dropFirst("voluntary_ctxt_switches:".count).trimmingPrefix(while: { $0 == " " || $0 == "\t" }))
}
