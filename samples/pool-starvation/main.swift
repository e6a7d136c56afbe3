// pool-starvation: `async` handlers that call a blocking wait, starving Swift's cooperative pool (as many threads as
// CPUs): every pool thread waits in `DispatchSemaphore.wait` under `Handler.fetch()`, and no other task can start
// until the semaphore is signalled. The pool is a watchdog target (`.cooperativePool`), added to the watchdog the
// environment starts:
//
//   STALLPROF_OUTPUT=pool.stalls pool-starvation [--busy N] [--global N] [--stray N] [--starved-first] [--handlers N] [--hold-ms N] [--threshold-ms N]
//
// 300 ms after the watchdog started (so it has seen the pool answer), --global (0-64, default 0) blocks of
// `DispatchQueue.global()` sleep for --hold-ms (on Linux they take threads from the pool's), --stray (0-64, default
// 0) plain threads started from tasks sleep as long in a `sync` block (not pool threads), --busy (0-64, default
// 0) handler tasks compute as long (`Handler.compute`), and --handlers (1-64, default the active CPUs + 2) handler
// tasks wait for a semaphore a plain thread signals --hold-ms later (default 1200). A request task started with them
// cannot run until then. The pool's threshold is --threshold-ms (default 100), or STALLPROF_POOL_MS's when set.
// --starved-first adds the pool target 50 ms after the handlers started: its first ping never runs. Prints `fetch tid T at N ms`
// (`compute tid ...`, `global tid ...`, `stray tid ...`) for each (its thread, and when it began after the start), `request waited N
// ms`, then stops the watchdog and exits 0.
import Dispatch
import Foundation
import Glibc
import StallProfiler
import StallSamples
import Synchronization

var handlers = ProcessInfo.processInfo.activeProcessorCount + 2, busy = 0, global = 0, stray = 0, starvedFirst = false, holdMs = 1200, thresholdMs = 100
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    if argument == "--starved-first" {
        starvedFirst = true
        continue
    }
    let value = arguments.next().flatMap(Int.init) ?? -1
    switch argument {
    case "--handlers" where (1...64).contains(value): handlers = value
    case "--busy" where (0...64).contains(value): busy = value
    case "--global" where (0...64).contains(value): global = value
    case "--stray" where (0...64).contains(value): stray = value
    case "--hold-ms" where (1...60_000).contains(value): holdMs = value
    case "--threshold-ms" where (10...10_000).contains(value): thresholdMs = value
    default:
        FileHandle.standardError.write(Data(
            "usage: pool-starvation [--handlers 1-64] [--busy 0-64] [--global 0-64] [--stray 0-64] [--starved-first] [--hold-ms N] [--threshold-ms 10-10000]\n".utf8))
        exit(64)
    }
}

let watchdog = DemoOptions.startWatchdogFromEnvironment()
// The one line a server needs to watch its pool; none when STALLPROF_POOL_MS watches it already.
@MainActor func watchThePool() {
    let value = ProcessInfo.processInfo.environment[StallWatchdog.poolVariable]?.trimmingCharacters(in: .whitespaces)
    if value.flatMap(Double.init).map({ $0 == 0 }) ?? true {
        try! watchdog?.add(.cooperativePool(threshold: .milliseconds(thresholdMs)))
    }
}
if !starvedFirst { watchThePool() }

/// When the handlers were started, uptime nanoseconds.
let started = Atomic<UInt64>(0)

/// Milliseconds since the handlers were started.
func sinceStart() -> UInt64 { (DispatchTime.now().uptimeNanoseconds - started.load(ordering: .relaxed)) / 1_000_000 }
/// What the handlers wait for: a backend's answer, here a semaphore a plain thread signals.
let backend = DispatchSemaphore(value: 0)

/// The request handlers.
enum Handler {
    /// Fetches from the backend the wrong way: a blocking wait inside an `async` function holds its pool thread.
    @inline(never) static func fetch() async -> Int32 {
        let tid = kernelThreadID()
        print("fetch tid \(tid) at \(sinceStart()) ms")
        backend.wait()
        return tid
    }

    /// Computes for `milliseconds` on its pool thread: busy, not blocked, and the pool is just as starved.
    @inline(never) static func compute(milliseconds: Int) async -> UInt64 {
        print("compute tid \(kernelThreadID()) at \(sinceStart()) ms")
        return BusyWork.spin(milliseconds: milliseconds)
    }
}

usleep(300_000)
started.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
let all = DispatchGroup()
// Blocks of `DispatchQueue.global()` that sleep: on Linux they hold threads the pool's jobs wait for.
let sleepMs = holdMs
for _ in 0..<global {
    all.enter()
    DispatchQueue.global().async {
        print("global tid \(kernelThreadID()) at \(sinceStart()) ms")
        usleep(UInt32(sleepMs * 1000))
        all.leave()
    }
}
// Plain threads started from a task, in a `sync` block: Linux gives them the worker's name, yet they are not pool
// threads.
let syncQueue = DispatchQueue(label: "stallprof.sample.sync")
for _ in 0..<stray {
    all.enter()
    Task.detached {
        Thread {
            syncQueue.sync {
                print("stray tid \(kernelThreadID()) at \(sinceStart()) ms")
                usleep(UInt32(sleepMs * 1000))
            }
            all.leave()
        }.start()
    }
}
for _ in 0..<busy {
    all.enter()
    let milliseconds = holdMs
    Task.detached { _ = await Handler.compute(milliseconds: milliseconds); all.leave() }
}
for _ in 0..<handlers {
    all.enter()
    Task.detached { _ = await Handler.fetch(); all.leave() }
}
all.enter()
Task.detached {
    print("request waited \(sinceStart()) ms")
    all.leave()
}
if starvedFirst {
    usleep(50_000)  // the handlers hold the pool before the watchdog's first ping
    watchThePool()
}
let release = (holdMs: holdMs, handlers: handlers)
Thread {
    usleep(UInt32(release.holdMs * 1000))
    for _ in 0..<release.handlers { backend.signal() }
}.start()
all.wait()
usleep(300_000)  // the watchdog sees the pool answer again
watchdog?.stop()
fflush(nil)
exit(0)
