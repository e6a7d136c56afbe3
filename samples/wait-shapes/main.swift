// wait-shapes: the main thread freezes waiting for something, in one of the shapes a real app hits. Each shape is
// one `@inline(never)` function of `Shapes` (so the frame that waits has a name to look for), run from a main-queue
// block on RunLoop.main. The thread the main thread waits for has a name (`pthread_setname_np`).
//
//   STALLPROF_OUTPUT=w.stalls wait-shapes SHAPE [--ms N]
//
// Shapes (--ms, default 1200, is how long the wait lasts):
//   mutex       a pthread mutex held by `db-worker`, asleep in nanosleep
//   sync        DispatchQueue.sync onto serial queue `com.example.db`, whose block (on a pool thread) sleeps
//   semaphore   DispatchSemaphore.wait(timeout:) for a reply `io-reader` sends after a blocking read() on a
//               socketpair, which `io-writer` feeds after --ms
//   group       DispatchGroup.wait() for a block on a global queue that sleeps
//   cond        pthread_cond_wait, signalled by `signaller` after --ms
//   cond-retake pthread_cond_wait, signalled at once by `signaller`, which keeps the mutex for --ms: the main
//               thread waits for the mutex it re-takes
//   join        pthread_join of `joined-worker`, asleep
//   rwlock      pthread_rwlock_rdlock while `db-writer` holds the write lock, asleep
//   pipe        read() on a pipe that `pipe-writer` writes after --ms
//   socket      read() on one end of a socketpair while `socket-peer` reads the other end (both wait for the
//               other) and `log-drain` reads an unrelated pipe; `socket-feeder` writes to all after --ms
//   sleep       nanosleep of --ms
//   deadlock    lock-order deadlock: main holds `lock A` and wants `lock B`; `db-worker` holds B and wants A. Never
//               ends: after --ms a terminator thread stops the watchdog and exits 0
//   self-wait   DispatchSemaphore.wait() for a `Task { @MainActor in ... }` queued behind itself. Never ends: the
//               terminator exits after --ms
// About 300 ms after a finite wait ends, the app stops the watchdog and exits 0. A helper's sleep cut short, or a
// read that failed with EINTR, is said on standard error ("wait-shapes: a sleep was cut short...").
import Dispatch
import Foundation
import StallProfiler

var shapeName = "", waitMs = 1200
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    if argument == "--ms", let value = arguments.next().flatMap(Int.init), (1...600_000).contains(value) {
        waitMs = value
    } else if shapeName.isEmpty, Shapes.all.contains(argument) {
        shapeName = argument
    } else {
        shapeName = ""
        break
    }
}
guard !shapeName.isEmpty else {
    FileHandle.standardError.write(Data("usage: wait-shapes \(Shapes.all.joined(separator: "|")) [--ms N]\n".utf8))
    exit(64)
}

let watchdog: StallWatchdog?
do { watchdog = try StallWatchdog.startFromEnvironment() } catch {
    FileHandle.standardError.write(Data("wait-shapes: \(error)\n".utf8))
    exit(1)
}
let shapes = Shapes(milliseconds: waitMs)
if Shapes.endless.contains(shapeName) {
    // A timed wait on a semaphore nobody signals, not a sleep: a thread in a timed sleep could be the one to end
    // the wait, and would keep the report from calling the wait a self-wait.
    let lasts = DispatchTime.now() + .milliseconds(waitMs + 600)
    Shapes.spawn("terminator") {
        _ = DispatchSemaphore(value: 0).wait(timeout: lasts)
        watchdog?.stop()
        exit(0)
    }
}
DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(300)) {
    FileHandle.standardError.write(Data("wait-shapes: pid \(getpid()) waits (\(shapeName))\n".utf8))
    shapes.run(shapeName)
    FileHandle.standardError.write(Data("wait-shapes: the wait ended\n".utf8))
    DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(300)) {
        watchdog?.stop()
        exit(0)
    }
}
RunLoop.main.run()
