import Foundation
import Testing

/// The defects a new user hits first (issue 9), through the built `stallprof`: standard input for fold, `-o`
/// targets, exact counts, empty inputs, absurd inputs.
@Suite struct TrustCLITests {
    /// Runs stallprof with `arguments`; standard input is `input` through a pipe, or a terminal when `terminal`.
    static func run(_ arguments: [String], input: String = "", terminal: Bool = false) throws -> (Int32, String, String) {
        try CLI.run(arguments, input: input, terminal: terminal)
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

    @Test func emptyInputIsAWarningAndExit0ForEveryCommand() throws {
        let dir = try Self.directory("empty")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let empty = dir + "/empty.stalls", one = dir + "/one.folded"
        #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
        try "a;b 2\n".write(toFile: one, atomically: false, encoding: .utf8)
        let runs: [([String], String)] = [
            (["fold", empty], ""), (["flamegraph", empty], "ERROR: No valid input"), (["diff", empty, one], "a;b 0 2\n"),
            (["diff", one, empty], "a;b 2 0\n"), (["report", empty], "0 episodes"),
        ]
        for (arguments, expected) in runs {
            let (status, out, err) = try Self.run(arguments)
            #expect(status == 0, "\(arguments): \(err)")
            #expect(err.contains("warning: \(empty): empty input"), "\(arguments): \(err)")
            #expect(expected.isEmpty ? out.isEmpty : out.contains(expected), "\(arguments): \(out)")
        }
    }

    @Test func flameGraphRejectsAbsurdlyDeepStacksWithFileAndLine() throws {
        let dir = try Self.directory("deep")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/deep.folded"
        // The first line is longer than format detection's window, as in a 50 MB single-line input.
        let deep = (0..<40_000).map { "frame\($0)" }.joined(separator: ";")
        try "\(deep) 1\nmain;ok 2\n".write(toFile: path, atomically: false, encoding: .utf8)
        let (status, _, err) = try Self.run(["flamegraph", path])
        #expect(status == 65)
        #expect(err.contains("\(path): line 1: a stack deeper than 16384 frames"), "\(err)")
        let (shallow, svg, _) = try Self.run(["flamegraph", "-"], input: "main;ok 2\n")
        #expect(shallow == 0 && svg.contains("ok (2 samples"))
    }

    /// A fresh empty directory.
    static func directory(_ name: String) throws -> String {
        let path = temporary(name)
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// The `lstat` of `path`.
    static func status(_ path: String) -> stat {
        var info = stat()
        #expect(lstat(path, &info) == 0, "lstat \(path)")
        return info
    }

    @Test func outputReplacesARegularFileAtomicallyKeepingModeAndOwner() throws {
        let dir = try Self.directory("out-regular")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/out.folded"
        try "old\n".write(toFile: path, atomically: false, encoding: .utf8)
        #expect(chmod(path, 0o640) == 0)
        let root = geteuid() == 0
        if root { #expect(chown(path, 4321, 4322) == 0) }
        let before = Self.status(path)
        let (status, _, err) = try Self.run(["fold", "-o", path, "-"], input: "a;b 3\n")
        #expect(status == 0, "\(err)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "a;b 3\n")
        let after = Self.status(path)
        #expect(after.st_mode & S_IFMT == S_IFREG && after.st_mode & 0o7777 == 0o640)
        #expect(after.st_ino != before.st_ino)  // a new file renamed into place, not rewritten in place
        if root { #expect(after.st_uid == 4321 && after.st_gid == 4322) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["out.folded"])  // no temporary left
    }

    @Test func outputWritesThroughSymbolicLinks() throws {
        let dir = try Self.directory("out-link")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "old\n".write(toFile: dir + "/target", atomically: false, encoding: .utf8)
        #expect(symlink("target", dir + "/link") == 0)
        #expect(symlink("missing", dir + "/dangling") == 0)
        for link in ["link", "dangling"] {
            let (status, _, err) = try Self.run(["diff", "-o", dir + "/" + link, "-", "/dev/null"], input: "a 2\n")
            #expect(status == 0, "\(err)")
            #expect(Self.status(dir + "/" + link).st_mode & S_IFMT == S_IFLNK)
        }
        #expect(try String(contentsOfFile: dir + "/target", encoding: .utf8) == "a 2 0\n")
        #expect(try String(contentsOfFile: dir + "/missing", encoding: .utf8) == "a 2 0\n")
    }

    @Test(.enabled(if: geteuid() == 0, "mknod needs root"))
    func outputWritesDevicesWithoutReplacingThem() throws {
        let dir = try Self.directory("out-device")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let null = dir + "/null"  // a /dev/null of our own (major 1, minor 3): the unfixed code would have replaced the real one
        #expect(mknod(null, S_IFCHR | 0o666, dev_t(0x103)) == 0)
        for path in [null, "/dev/null"] {
            let (status, _, err) = try Self.run(["fold", "-o", path, "-"], input: "a;b 3\n")
            #expect(status == 0, "\(err)")
            #expect(Self.status(path).st_mode & S_IFMT == S_IFCHR)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["null"])
    }

    @Test func outputWritesIntoAFIFO() throws {
        let dir = try Self.directory("out-fifo")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fifo = dir + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let received = Received()
        let reader = Thread {
            let fd = open(fifo, O_RDONLY)
            received.finish(Self.readToEnd(fd))
        }
        reader.start()
        let (status, _, err) = try Self.run(["fold", "-o", fifo, "-"], input: "a;b 3\n")
        #expect(status == 0, "\(err)")
        #expect(received.wait() == "a;b 3\n")
        #expect(Self.status(fifo).st_mode & S_IFMT == S_IFIFO)
    }

    @Test func outputWritesIntoAUnixSocket() throws {
        let dir = try Self.directory("out-socket")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/sock"
        let server = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(server, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0 && listen(server, 1) == 0)
        let received = Received()
        let reader = Thread {
            let fd = accept(server, nil, nil)
            received.finish(Self.readToEnd(fd))
        }
        reader.start()
        let (status, _, err) = try Self.run(["fold", "-o", path, "-"], input: "a;b 3\n")
        #expect(status == 0, "\(err)")
        #expect(received.wait() == "a;b 3\n")
        #expect(Self.status(path).st_mode & S_IFMT == S_IFSOCK)
        close(server)
    }
}

/// What a reader thread received, handed over once.
final class Received: @unchecked Sendable {
    private let condition = NSCondition()
    private var text: String?

    /// Stores the result and wakes the waiter.
    func finish(_ value: String) {
        condition.lock()
        text = value
        condition.broadcast()
        condition.unlock()
    }

    /// The result, waiting up to 30 s (nil then).
    func wait() -> String? {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date().addingTimeInterval(30)
        while text == nil, condition.wait(until: deadline) {}
        return text
    }
}

extension TrustCLITests {
    /// Everything `fd` delivers until end of file (nothing for a descriptor below 0), as text; closes it.
    static func readToEnd(_ fd: Int32) -> String {
        var bytes: [UInt8] = [], buffer = [UInt8](repeating: 0, count: 4096)
        while fd >= 0 {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            bytes += buffer[..<n]
        }
        close(fd)
        return String(decoding: bytes, as: UTF8.self)
    }
}
