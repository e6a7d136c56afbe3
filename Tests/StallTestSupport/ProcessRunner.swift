import Foundation

/// Runs a program as a test's subprocess: the one runner of the analysis and CLI tests.
public enum ProcessRunner {
    /// What a run left: exit status, standard output and standard error.
    public struct Result: Sendable {
        /// The exit status.
        public var status: Int32
        /// Standard output's bytes.
        public var bytes: [UInt8]
        /// Standard error as text.
        public var err: String
        /// Standard output as text.
        public var out: String { String(decoding: bytes, as: UTF8.self) }
    }

    /// Runs `executable` with `arguments` (and `environment` added to this process's) to its end; standard input
    /// is `input` through a pipe, or the descriptor `terminal` (then `input` is not written). Standard input and
    /// standard error are served on threads of their own, so that no pipe fills up and blocks the other.
    public static func run(
        _ executable: String, _ arguments: [String], input: [UInt8] = [], environment: [String: String] = [:],
        terminal: Int32? = nil
    ) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let (stdin, stdout, stderr) = (Pipe(), Pipe(), Pipe())
        if let terminal {
            process.standardInput = FileHandle(fileDescriptor: terminal, closeOnDealloc: false)
        } else {
            process.standardInput = stdin
        }
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        if terminal == nil {
            Thread {
                // A child that exits before reading all of its input (a usage error) must not end this process:
                // with SIGPIPE blocked on this thread (only: children keep the default) the write fails with
                // EPIPE, and the error is the child's. The pending signal goes with the thread.
                var pipe = sigset_t()
                sigemptyset(&pipe)
                sigaddset(&pipe, SIGPIPE)
                pthread_sigmask(SIG_BLOCK, &pipe, nil)
                try? stdin.fileHandleForWriting.write(contentsOf: Data(input))
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
        return Result(status: process.terminationStatus, bytes: Array(out), err: errors.text)
    }

    /// Standard error, filled on another thread.
    private final class ErrorText: @unchecked Sendable {
        private var data = Data()
        private let lock = NSLock()
        func set(_ value: Data) { lock.lock(); data = value; lock.unlock() }
        var text: String { lock.lock(); defer { lock.unlock() }; return String(decoding: data, as: UTF8.self) }
    }
}
