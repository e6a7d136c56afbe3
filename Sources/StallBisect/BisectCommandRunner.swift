import StallFormat
#if canImport(Glibc)
import Glibc
#endif

/// Runs the command under bisection for ``BisectSearch``: each configuration executes the command directly, in
/// a process group of its own, with `STALLPROF_DISABLE` listing the disabled flags and
/// `STALLPROF_FLAGS_REPORT` naming a scratch file where ``StallFlags`` (in the app) lists the flags it
/// consulted. Those names are gathered in ``consultedFlags``. With ``RunClassifierOptions/Measure/watchdog``,
/// `STALLPROF_OUTPUT` also names a scratch capture file for the app's watchdog.
public final class BisectCommandRunner {
    /// The command and its arguments.
    public let command: [String]
    /// How runs are classified.
    public let classifier: RunClassifierOptions
    /// Every flag name the app reported consulting, over all runs so far.
    public private(set) var consultedFlags: Set<String> = []
    private let scratchDirectory: ScratchDirectory
    private var scratch: String { scratchDirectory.path }
    private var counter = 0

    /// Creates a runner; makes a scratch directory for the flag reports.
    public init(command: [String], classifier: RunClassifierOptions) throws {
        guard !command.isEmpty else { throw StallError.usage("no command after --") }
        self.command = command
        self.classifier = classifier
        scratchDirectory = try ScratchDirectory(prefix: "stallprof-bisect")
    }

    /// Runs the command once per configuration (flags to disable), all at once, and classifies each run.
    public func run(_ configurations: [[String]], _ phase: BisectPhase) throws -> [BisectObservation] {
        var reports: [String] = []
        var captures: [String] = []
        let launches = configurations.map { disabled -> ProcessRunner.Launch in
            counter += 1
            let report = "\(scratch)/flags-\(counter)"
            reports.append(report)
            var environment = [EnvironmentName.disable: disabled.joined(separator: ","), EnvironmentName.flagsReport: report]
            if classifier.measure == .watchdog {
                let capture = "\(scratch)/run-\(counter).stalls"
                environment[EnvironmentName.output] = capture
                captures.append(capture)
            }
            return ProcessRunner.Launch(arguments: command, environment: environment)
        }
        defer { (reports + captures).forEach { unlink($0) } }
        let observations = try ProcessRunner.run(launches, options: classifier)
        for report in reports {
            guard let text = FileReader.text(of: report) else { continue }
            consultedFlags.formUnion(text.split(separator: "\n").map(String.init))
        }
        return observations
    }
}

/// A private directory for a command's scratch files (in `$TMPDIR`, else /tmp, made with `mkdtemp`), removed
/// when released if it is empty by then.
public final class ScratchDirectory {
    /// The directory.
    public let path: String

    /// Creates `$TMPDIR/PREFIX-XXXXXX`.
    public init(prefix: String) throws {
        let base = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        var template = Array("\(base)/\(prefix)-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw StallError.output(path: base, reason: "cannot create a scratch directory")
        }
        path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit { rmdir(path) }
}
