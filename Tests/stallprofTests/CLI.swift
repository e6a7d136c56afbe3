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

    /// A JSON object from text.
    static func json(_ text: String) throws -> [String: Any] { try json(Array(text.utf8)) }
}
