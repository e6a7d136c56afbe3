import Foundation
import StallAnalysis
import StallFormat
import Testing

/// Issue 18: a stack read from a sleeping main thread's memory (never signalled) has the frames gdb's backtrace of
/// the same thread in the same wait has, in the same order, pc for pc, by the comparison rule of docs/WATCHDOG.md
/// (gdb's tail-call and inlined frames left out, and its `??` frames where an image has no unwind information).
/// wait-shapes' main thread waits in each shape for seconds; gdb attaches once it waits there. One shape at a time:
/// with six run at once, one attach of gdb here waited for a thread stop forever.
@Suite(.serialized, .enabled(if: Debugger.path != nil, "needs gdb (Debian's package gdb, which tools/test.sh installs)"))
struct DebuggerStackTests {
    /// Per shape, a function gdb's stack of the main thread holds once it is in the shape's last wait (not in an
    /// earlier, short one such as the semaphore the mutex shape waits on for its holder to start).
    static let waitsIn = [
        "mutex": "lll_lock_wait", "sync": "_dispatch_sync_f_slow", "semaphore": "_dispatch_semaphore_wait_slow",
        "cond": "pthread_cond_wait", "pipe": "libc_read", "sleep": "clock_nanosleep",
    ]

    /// The wait-shapes run: this build's, or the one `STALLPROF_TEST_WAIT_SHAPES` names (a release build:
    /// `swift build -c release --product wait-shapes`, whose code has no frame pointers and more tail calls).
    static let app = ProcessInfo.processInfo.environment["STALLPROF_TEST_WAIT_SHAPES"].map(URL.init(fileURLWithPath:))
        ?? TestSupport.productsDirectory.appendingPathComponent("wait-shapes")

    /// How long each wait lasts: long enough for gdb to attach more than once on a loaded machine.
    static let waitMs = 8000

    @Test(arguments: ["mutex", "sync", "semaphore", "cond", "pipe", "sleep"])
    func theStackReadFromMemoryHasGdbsFramesInOrder(shape: String) throws {
        let path = TestSupport.temporaryPath("gdb-\(shape).stalls")
        defer { unlink(path) }
        let process = Process()
        process.executableURL = Self.app
        process.arguments = [shape, "--ms", String(Self.waitMs)]
        process.environment = ProcessInfo.processInfo.environment.merging([EnvironmentName.output: path]) { $1 }
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        var text = ""
        while !text.contains("waits (") {
            let chunk = errors.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        try #require(text.contains("waits (\(shape))"), "wait-shapes: \(text)")
        let gdb = try waitingStack(of: process.processIdentifier, shape: shape)
        text += String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")

        let capture = try CaptureReader.read(path: path)
        let (expected, unnamed) = Debugger.comparable(gdb)
        let leaf = try #require(expected.first)
        let memorySamples = capture.stalls.flatMap(\.samples).filter {
            $0.flags.contains(.fromStackMemory) && $0.frames.first == leaf
        }
        let sample = try #require(
            memorySamples.last, "no sample read from memory at gdb's pc 0x\(String(leaf, radix: 16)): \(text)")
        let frames = sample.frames.filter { !unnamed.contains($0) }
        let symbolizer = Symbolizer(images: capture.images)
        let ours = frames.enumerated().map { index, pc in
            String(format: "0x%llx ", pc) + symbolizer.name(for: pc, isReturnAddress: index > 0)
        }
        #expect(
            frames == expected,
            "\(shape): stallprof (memory):\n\(ours.joined(separator: "\n"))\ngdb:\n\(gdb.map(\.description).joined(separator: "\n"))")
    }

    /// gdb's frames of the main thread of `pid`, once they show it in the shape's wait (gdb is asked again, a few
    /// times, while the thread is still on its way there). Cancels the test when gdb cannot attach at all (Yama's
    /// ptrace_scope, a container without CAP_SYS_PTRACE).
    func waitingStack(of pid: Int32, shape: String) throws -> [Debugger.Frame] {
        let wanted = try #require(Self.waitsIn[shape])
        var last = Debugger.Backtrace(frames: [], output: "")
        for _ in 0..<20 {
            usleep(300_000)
            last = try Debugger.backtrace(of: pid)
            if last.frames.isEmpty && !last.output.contains("gdb killed") {
                kill(pid, SIGKILL)
                try Test.cancel("gdb cannot attach to wait-shapes: \(last.output.suffix(400))")
            }
            if last.frames.contains(where: { $0.name?.contains(wanted) == true }) { return last.frames }
        }
        Issue.record("gdb never saw the main thread in \(wanted): \(last.frames)")
        return last.frames
    }
}
