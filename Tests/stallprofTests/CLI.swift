import Foundation
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
    /// terminal when `terminal`. Standard input and error are served on threads of their own, so no pipe fills up.
    static func run(_ arguments: [String], input: [UInt8] = [], terminal: Bool = false,
                    environment: [String: String] = [:], executable: String = path) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let (stdin, stdout, stderr) = (Pipe(), Pipe(), Pipe())
        var pty: (master: Int32, slave: Int32)?
        if terminal {
            // posix_openpt and friends are not visible from Swift's Glibc: /dev/ptmx with TIOCSPTLCK (unlock) and
            // TIOCGPTN (number), the generic Linux ioctl numbers.
            let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
            var unlock: Int32 = 0, number: Int32 = -1
            #expect(master >= 0 && ioctl(master, 0x4004_5431, &unlock) == 0 && ioctl(master, 0x8004_5430, &number) == 0)
            let slave = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY)
            #expect(slave >= 0)
            pty = (master, slave)
            process.standardInput = FileHandle(fileDescriptor: slave, closeOnDealloc: false)
        } else {
            process.standardInput = stdin
        }
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        if let pty {
            close(pty.slave)
        } else {
            Thread {
                stdin.fileHandleForWriting.write(Data(input))
                try? stdin.fileHandleForWriting.close()
            }.start()
        }
        let errors = ErrorText()
        let done = DispatchSemaphore(value: 0)
        Thread {
            errors.set(stderr.fileHandleForReading.readDataToEndOfFile())
            done.signal()
        }.start()
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        done.wait()
        process.waitUntilExit()
        if let pty { close(pty.master) }
        return Result(status: process.terminationStatus, bytes: Array(out), err: errors.text)
    }

    /// As ``run(_:input:terminal:environment:executable:)`` with text input; (status, stdout, stderr).
    static func run(_ arguments: [String], input: String, terminal: Bool = false) throws -> (Int32, String, String) {
        let result = try run(arguments, input: Array(input.utf8), terminal: terminal)
        return (result.status, result.out, result.err)
    }

    /// Standard error, filled on another thread.
    private final class ErrorText: @unchecked Sendable {
        private var data = Data()
        private let lock = NSLock()
        func set(_ value: Data) { lock.lock(); data = value; lock.unlock() }
        var text: String { lock.lock(); defer { lock.unlock() }; return String(decoding: data, as: UTF8.self) }
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
