import Foundation
import StallTestSupport
import Testing

/// The `stallprof` built with the tests (the test target depends on it), run as a user runs it.
enum CLI {
    /// The directory of the built products: the test bundle sits beside the executables.
    static let products: String = {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        while url.path != "/" && !FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("stallprof").path) {
            url.deleteLastPathComponent()
        }
        return url.path
    }()

    /// The built `stallprof`.
    static var path: String { products + "/stallprof" }

    /// A built product beside `stallprof` (a sample app).
    static func product(_ name: String) -> String { products + "/" + name }

    /// A fixture of the analysis tests (Tests/StallAnalysisTests/Fixtures), read in place.
    static func fixture(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("StallAnalysisTests/Fixtures/\(name)").path
    }

    /// What a run left: exit status, standard output and standard error.
    struct Result {
        var status: Int32
        var bytes: [UInt8]
        var err: String
        var out: String { String(decoding: bytes, as: UTF8.self) }
        /// (status, standard output's bytes, standard error).
        var tuple: (Int32, [UInt8], String) { (status, bytes, err) }
    }

    /// Runs `executable` (default: stallprof) with `arguments`; standard input is `input` through a pipe, or a
    /// terminal when `terminal`.
    static func run(_ arguments: [String], input: [UInt8] = [], terminal: Bool = false,
                    environment: [String: String] = [:], executable: String = path) throws -> Result {
        guard terminal else {
            let r = try ProcessRunner.run(executable, arguments, input: input, environment: environment)
            return Result(status: r.status, bytes: r.bytes, err: r.err)
        }
        // posix_openpt and friends are not visible from Swift's Glibc: /dev/ptmx with TIOCSPTLCK (unlock) and
        // TIOCGPTN (number), the generic Linux ioctl numbers.
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        var unlock: Int32 = 0, number: Int32 = -1
        #expect(master >= 0 && ioctl(master, 0x4004_5431, &unlock) == 0 && ioctl(master, 0x8004_5430, &number) == 0)
        let slave = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY)
        #expect(slave >= 0)
        defer { close(slave); close(master) }
        let r = try ProcessRunner.run(executable, arguments, environment: environment, terminal: slave)
        return Result(status: r.status, bytes: r.bytes, err: r.err)
    }

    /// As ``run(_:input:terminal:environment:executable:)`` with text input; (status, stdout, stderr).
    static func run(_ arguments: [String], input: String, terminal: Bool = false) throws -> (Int32, String, String) {
        let result = try run(arguments, input: Array(input.utf8), terminal: terminal)
        return (result.status, result.out, result.err)
    }

    /// A fresh path in the temporary directory.
    static func temporary(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("stallprof-cli-\(getpid())-\(UUID().uuidString.prefix(8))-\(name)").path
    }

    /// Writes `bytes` to a fresh temporary file and returns its path.
    static func temporary(_ bytes: [UInt8], suffix: String) throws -> String {
        let path = temporary("input" + suffix)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A JSON object.
    static func json(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    /// Starts `arguments` (the executable's path first) with `environment` added to this process's, standard output
    /// and error on /dev/null, no signal blocked (the test runner blocks some, and a child inherits its mask) and
    /// `defaultSignals` at their default action; returns the pid, to be waited for.
    static func spawn(_ arguments: [String], environment: [String: String] = [:], defaultSignals: [Int32] = [])
        throws -> pid_t
    {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var mask = sigset_t(), defaults = sigset_t()
        sigemptyset(&mask)
        sigemptyset(&defaults)
        for signal in defaultSignals { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let inherited = (0..<Int.max).lazy.map { environ[$0] }.prefix { $0 != nil }.map { String(cString: $0!) }
        let env = inherited.filter { entry in !environment.keys.contains { entry.hasPrefix($0 + "=") } }
            + environment.map { "\($0.key)=\($0.value)" }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = env.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        try #require(result == 0, "cannot start \(arguments[0])")
        return pid
    }

    /// A JSON object from text.
    static func json(_ text: String) throws -> [String: Any] { try json(Array(text.utf8)) }
}
