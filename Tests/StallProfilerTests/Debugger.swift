import Foundation

/// gdb as the reference for stacks: it attaches to a process (ptrace), walks one thread's stack with its full
/// registers and prints each frame's kind, pc and name through its Python API, so that a stack stallprof read from
/// memory can be compared with what a debugger sees.
enum Debugger {
    /// One frame of gdb's backtrace, innermost first.
    struct Frame: Equatable, CustomStringConvertible {
        /// gdb's frame type (`gdb.NORMAL_FRAME` 0, `INLINE_FRAME` 2, `TAILCALL_FRAME` 3, ...).
        var type: Int
        /// The frame's pc: the interrupted instruction for the innermost frame, the return address for the others.
        var pc: UInt64
        /// The function's name, nil where gdb has none (`??`).
        var name: String?

        /// `gdb.INLINE_FRAME`: a function inlined at its caller's pc (the caller follows with the same pc).
        static let inline = 2
        /// `gdb.TAILCALL_FRAME`: rebuilt from DWARF call-site information; its return address is not in memory.
        static let tailCall = 3

        /// As a line of a failure message.
        var description: String { String(format: "%d 0x%llx %@", type, pc, name ?? "??") }
    }

    /// gdb's path, nil when it is not installed (Debian's package `gdb`, which tools/test.sh installs when missing).
    static let path: String? = ["/usr/bin/gdb", "/usr/local/bin/gdb"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// The Python run inside gdb: the thread whose id is the process id (the main thread), every frame from the
    /// innermost, also past `main` and the entry point, as `stallprof-frame TYPE PC NAME`.
    static let script = """
        import gdb
        gdb.execute("set backtrace past-main on")
        gdb.execute("set backtrace past-entry on")
        inferior = gdb.selected_inferior()
        for thread in inferior.threads():
            if thread.ptid[1] == inferior.pid:
                thread.switch()
        frame = gdb.newest_frame()
        while frame is not None:
            print("stallprof-frame %d 0x%x %s" % (frame.type(), frame.pc(), frame.name() or "??"))
            try:
                frame = frame.older()
            except gdb.error:
                break
        """

    /// What one attach gave: the main thread's frames (empty when gdb could not attach) and gdb's whole output.
    struct Backtrace {
        /// The main thread's frames, innermost first.
        var frames: [Frame]
        /// Everything gdb printed, for messages (why it could not attach: ptrace_scope, no permission).
        var output: String
    }

    /// Most seconds one attach may take; past them gdb is killed (an attach here once waited forever for a
    /// thread's stop) and the process continued (SIGCONT: gdb's SIGSTOP may still hold it).
    static let attachSeconds = 90

    /// Attaches gdb to `pid` in batch mode, prints its main thread's frames and detaches (the process goes on).
    static func backtrace(of pid: Int32) throws -> Backtrace {
        guard let gdb = path else { throw DebuggerMissing() }
        let scriptPath = TestSupport.temporaryPath("frames.py")
        try script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        defer { unlink(scriptPath) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: gdb)
        process.arguments = [
            "-nx", "-batch", "-iex", "set debuginfod enabled off", "-p", String(pid), "-x", scriptPath,
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let debugger = process.processIdentifier
        let watch = DispatchWorkItem {
            kill(debugger, SIGKILL)
            kill(pid, SIGCONT)
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(attachSeconds), execute: watch)
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        watch.cancel()
        var text = String(decoding: data, as: UTF8.self)
        if process.terminationReason == .uncaughtSignal { text += "\n(gdb killed after \(attachSeconds) s)" }
        return Backtrace(frames: text.split(separator: "\n").compactMap(frame(of:)), output: text)
    }

    /// The frame a `stallprof-frame TYPE PC NAME` line describes; nil for gdb's other lines.
    static func frame(of line: Substring) -> Frame? {
        let fields = line.split(separator: " ", maxSplits: 3)
        guard fields.count == 4, fields[0] == "stallprof-frame", let type = Int(fields[1]),
            fields[2].hasPrefix("0x"), let pc = UInt64(fields[2].dropFirst(2), radix: 16)
        else { return nil }
        return Frame(type: type, pc: pc, name: fields[3] == "??" ? nil : String(fields[3]))
    }

    /// The frames a stack read from memory can have, by the comparison rule of docs/WATCHDOG.md: gdb's tail-call
    /// frames are left out (rebuilt from DW_TAG_call_site, not in memory) and so are inlined frames (the function
    /// they are inlined in follows with the same pc); `unnamed` gets the pcs of frames gdb has no name for (`??`,
    /// where an image has no unwind information gdb may take a saved word for a return address).
    static func comparable(_ frames: [Frame]) -> (pcs: [UInt64], unnamed: Set<UInt64>) {
        let kept = frames.filter { $0.type != Frame.inline && $0.type != Frame.tailCall }
        return (kept.filter { $0.name != nil }.map(\.pc), Set(kept.filter { $0.name == nil }.map(\.pc)))
    }
}

/// gdb is not installed.
struct DebuggerMissing: Error {}
