import Foundation
import Testing

/// `-o` as the shell's `>` where it can (issue 17): a signal during the output removes the temporary file and
/// leaves the target as it was; a file the user may not write is refused; a file a replacement would not keep as
/// it is (a read-only directory, other hard links, another owner) is written in place.
@Suite struct OutputTargetCLITests {
    /// A fresh directory with mode 0755, owned by `owner` when given (as root).
    static func directory(_ name: String, owner: uid_t? = nil) throws -> String {
        let path = CLI.temporary(name)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        #expect(chmod(path, 0o755) == 0)
        if let owner { #expect(chown(path, owner, gid_t(owner)) == 0) }
        return path
    }

    /// Writes `text` to `path` with `mode`, owned by `owner` when given.
    static func file(_ path: String, _ text: String, mode: mode_t = 0o644, owner: uid_t? = nil) throws {
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        #expect(chmod(path, mode) == 0)
        if let owner { #expect(chown(path, owner, gid_t(owner)) == 0) }
    }

    static func contents(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

    static func status(_ path: String) -> stat {
        var info = stat()
        _ = lstat(path, &info)
        return info
    }

    static func names(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    // MARK: Interrupted -o

    /// stallprof opens `-o`'s temporary file before it reads its input (as the shell opens `>`'s file first): with a
    /// FIFO as input that is kept open, it is caught with the temporary file open, waiting for more input.
    @Test(arguments: [SIGINT, SIGTERM, SIGHUP])
    func aSignalRemovesTheTemporaryFileAndLeavesTheTargetAlone(signal: Int32) throws {
        let dir = try Self.directory("interrupted")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let target = dir + "/out.folded", fifo = dir + "/input.fifo"
        try Self.file(target, "old\n", mode: 0o640)
        #expect(mkfifo(fifo, 0o600) == 0)
        let pid = try CLI.spawn([CLI.path, "fold", "-o", target, fifo], defaultSignals: [SIGINT, SIGTERM, SIGHUP])
        var status: Int32 = 0
        var exited = false
        func reap(_ flags: Int32) {
            if !exited, waitpid(pid, &status, flags) == pid { exited = true }
        }
        defer {
            if !exited { kill(pid, SIGKILL) }
            reap(0)
        }
        // Our end of the FIFO opens once stallprof opened its end, after it made the temporary file. (A bound of
        // 10 minutes keeps a broken stallprof from hanging the tests; it is not a timing assertion.)
        var writer: Int32 = -1
        for _ in 0..<60_000 where writer < 0 && !exited {
            writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if writer < 0 { usleep(10_000) }
            reap(WNOHANG)
        }
        try #require(writer >= 0, "stallprof ended before reading its input")
        defer { close(writer) }
        let line = Array("main;work 5\n".utf8)
        #expect(write(writer, line, line.count) == line.count)
        let during = Self.names(dir)
        #expect(during.count == 3 && during.contains { $0.hasPrefix(".out.folded.stallprof-") }, "\(during)")
        #expect(kill(pid, signal) == 0)
        for _ in 0..<60_000 where !exited {
            reap(WNOHANG)
            if !exited { usleep(10_000) }
        }
        try #require(exited, "stallprof did not end on signal \(signal)")
        // It died of the signal (a shell says 128 + signal: 130, 143, 129), as without a handler.
        #expect(status & 0x7f == signal, "wait status \(status)")
        #expect(Self.names(dir) == ["input.fifo", "out.folded"])
        #expect(Self.contents(target) == "old\n" && Self.status(target).st_mode & 0o7777 == 0o640)
    }

    @Test func aSignalTheCommandIgnoresStaysIgnored() throws {
        let dir = try Self.directory("ignored")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let target = dir + "/out.folded", fifo = dir + "/input.fifo"
        try Self.file(target, "old\n")
        #expect(mkfifo(fifo, 0o600) == 0)
        // `trap '' INT` ignores SIGINT, and exec keeps it ignored (as for a background job of a script).
        let pid = try CLI.spawn(["/bin/sh", "-c", "trap '' INT; exec \"$0\" \"$@\"", CLI.path, "fold", "-o", target, fifo],
                                defaultSignals: [SIGINT, SIGTERM, SIGHUP])
        var status: Int32 = 0
        var reaped = false
        defer {
            if !reaped {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
            }
        }
        var writer: Int32 = -1
        for _ in 0..<60_000 where writer < 0 {
            writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if writer < 0 { usleep(10_000) }
        }
        try #require(writer >= 0, "stallprof did not read its input")
        let line = Array("main;work 5\n".utf8)
        #expect(write(writer, line, line.count) == line.count)
        // Discarded when sent (ignored); a handler would have run before stallprof could see the end of its input.
        #expect(kill(pid, SIGINT) == 0)
        close(writer)
        reaped = waitpid(pid, &status, 0) == pid
        #expect(reaped && status == 0, "wait status \(status)")
        #expect(Self.contents(target) == "main;work 5\n" && Self.names(dir) == ["input.fifo", "out.folded"])
    }

    @Test func aFailureAfterTheTemporaryFileWasMadeRemovesIt() throws {
        let dir = try Self.directory("failed")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let target = dir + "/out.svg"
        try Self.file(target, "old\n")
        let result = try CLI.run(["flamegraph", "-o", target, "-"], input: Array("not a profile\n".utf8))
        #expect(result.status == 65)
        #expect(Self.names(dir) == ["out.svg"] && Self.contents(target) == "old\n")
    }

    // MARK: -o as the shell's >

    /// The user the checks run as: nobody (65534) through setpriv when the tests run as root (root may write any
    /// file, so the checks would mean nothing), this process's user otherwise.
    static let user: uid_t = geteuid() == 0 ? 65534 : geteuid()
    static let canRunAsUser = geteuid() != 0 || FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")

    /// Runs stallprof as ``user`` with `input` on standard input.
    static func runAsUser(_ arguments: [String], input: String) throws -> CLI.Result {
        guard geteuid() == 0 else { return try CLI.run(arguments, input: Array(input.utf8)) }
        return try CLI.run(["--reuid=\(user)", "--regid=\(user)", "--clear-groups", CLI.path] + arguments,
                           input: Array(input.utf8), executable: "/usr/bin/setpriv")
    }

    /// The owner to give test files: ``user`` when running as root, nobody else otherwise.
    static var owner: uid_t? { geteuid() == 0 ? user : nil }

    @Test(.enabled(if: canRunAsUser, "needs setpriv to run as a user who is not root"))
    func aFileTheUserMayNotWriteIsRefusedThoughItCouldBeReplaced() throws {
        let dir = try Self.directory("read-only-file", owner: Self.owner)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let target = dir + "/out.folded"
        try Self.file(target, "old\n", mode: 0o444, owner: Self.owner)
        let inode = Self.status(target).st_ino
        let result = try Self.runAsUser(["fold", "-o", target, "-"], input: "a;b 3\n")
        #expect(result.status == 1, "\(result.err)")
        #expect(result.err == "stallprof: error: \(target): Permission denied\n")
        #expect(Self.contents(target) == "old\n" && Self.status(target).st_ino == inode && Self.names(dir) == ["out.folded"])
    }

    @Test(.enabled(if: canRunAsUser, "needs setpriv to run as a user who is not root"))
    func aWritableFileInAReadOnlyDirectoryIsWrittenInPlace() throws {
        let dir = try Self.directory("read-only-dir", owner: Self.owner)
        defer {
            chmod(dir, 0o755)
            try? FileManager.default.removeItem(atPath: dir)
        }
        let target = dir + "/out.folded"
        try Self.file(target, "old, and longer than the result\n", mode: 0o640, owner: Self.owner)
        let inode = Self.status(target).st_ino
        #expect(chmod(dir, 0o555) == 0)
        let result = try Self.runAsUser(["fold", "-o", target, "-"], input: "a;b 3\n")
        #expect(result.status == 0, "\(result.err)")
        #expect(Self.contents(target) == "a;b 3\n")
        #expect(Self.status(target).st_ino == inode && Self.status(target).st_mode & 0o7777 == 0o640)
        #expect(Self.names(dir) == ["out.folded"])
    }

    @Test(.enabled(if: geteuid() == 0 && canRunAsUser, "needs root to own a file and setpriv to run as nobody"))
    func aWritableFileOfAnotherUserKeepsItsOwner() throws {
        let dir = try Self.directory("other-owner", owner: Self.owner)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let target = dir + "/out.folded"
        // World-writable and root's: a new file would be nobody's, so it is written in place and stays root's.
        try Self.file(target, "old\n", mode: 0o666, owner: 0)
        let before = Self.status(target)
        let result = try Self.runAsUser(["fold", "-o", target, "-"], input: "a;b 3\n")
        #expect(result.status == 0, "\(result.err)")
        let after = Self.status(target)
        #expect(Self.contents(target) == "a;b 3\n" && after.st_ino == before.st_ino && after.st_uid == 0)
        #expect(after.st_mode & 0o7777 == 0o666 && Self.names(dir) == ["out.folded"])
    }

    @Test func aFileWithOtherHardLinksIsWrittenInPlaceAndTheLinksStayOneFile() throws {
        let dir = try Self.directory("hard-links", owner: Self.owner)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let target = dir + "/out.folded", other = dir + "/other-name.folded"
        try Self.file(target, "old\n", mode: 0o600, owner: Self.owner)
        #expect(link(target, other) == 0)
        let inode = Self.status(target).st_ino
        // As this process's user (root too) and, where possible, as a user who is not root.
        let runs: [(() throws -> CLI.Result, String)] = [
            ({ try CLI.run(["diff", "-o", target, "-", "/dev/null"], input: Array("a 2\n".utf8)) }, "a 2 0\n"),
        ] + (Self.canRunAsUser ? [({ try Self.runAsUser(["fold", "-o", target, "-"], input: "b 3\n") }, "b 3\n")] : [])
        for (run, expected) in runs {
            let result = try run()
            #expect(result.status == 0, "\(result.err)")
            #expect(Self.contents(target) == expected && Self.contents(other) == expected)
            let info = Self.status(target)
            #expect(info.st_ino == inode && info.st_nlink == 2 && Self.status(other).st_ino == inode)
            #expect(info.st_mode & 0o7777 == 0o600)
        }
        #expect(Self.names(dir) == ["other-name.folded", "out.folded"])
    }

    @Test(.enabled(if: geteuid() == 0, "root may write any file, as with the shell"))
    func rootReplacesAReadOnlyFileKeepingItsModeAndOwner() throws {
        let dir = try Self.directory("root-read-only")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let target = dir + "/out.folded"
        try Self.file(target, "old\n", mode: 0o444, owner: 4321)
        let before = Self.status(target)
        let result = try CLI.run(["fold", "-o", target, "-"], input: Array("a;b 3\n".utf8))
        #expect(result.status == 0, "\(result.err)")
        let after = Self.status(target)
        #expect(Self.contents(target) == "a;b 3\n" && after.st_ino != before.st_ino)
        #expect(after.st_mode & 0o7777 == 0o444 && after.st_uid == 4321 && after.st_gid == 4321)
    }
}
