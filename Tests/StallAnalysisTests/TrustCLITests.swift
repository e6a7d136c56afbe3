import Foundation
import Testing

/// The defects a new user hits first (issue 9), through the built `stallprof`: standard input for fold, `-o`
/// targets, exact counts, empty inputs, absurd inputs.
@Suite(.enabled(if: BuiltCLI.path != nil, "stallprof is not built beside the tests"))
struct TrustCLITests {
    /// Runs stallprof with `arguments`; standard input is `input` through a pipe, or a terminal when `terminal`.
    static func run(_ arguments: [String], input: String = "", terminal: Bool = false) throws -> (Int32, String, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: BuiltCLI.path!)
        process.arguments = arguments
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
            stdin.fileHandleForWriting.write(Data(input.utf8))
            try stdin.fileHandleForWriting.close()
        }
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        let err = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        if let pty { close(pty.master) }
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }

    /// A fresh path in the temporary directory.
    static func temporary(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("trust-\(getpid())-\(name)").path
    }

    @Test func foldWithoutFileReadsAPipeButNotATerminal() throws {
        let perf = "app 100/100 [000] 1.000000: 250000 cpu-clock:\n\t    1000 work (/bin/app)\n\t    2000 main (/bin/app)\n\n"
        let (status, out, err) = try Self.run(["fold"], input: perf)
        #expect(status == 0, "\(err)")
        #expect(out == "app;main;work 250000\n")
        let (tty, ttyOut, ttyErr) = try Self.run(["fold"], terminal: true)
        #expect(tty == 64 && ttyOut.isEmpty && ttyErr.contains("no input files"))
    }
}
