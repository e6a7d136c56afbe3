// watchdog-trials: situations a host app can put the watchdog in, run as separate processes by the tests.
//
//   STALLPROF_OUTPUT=a.stalls watchdog-trials small-stack
//       The main queue's work recurses until only ~8 KiB of the main thread's stack is left (run it with a small
//       `ulimit -s`), then spins there for 600 ms while the watchdog samples it.
//   STALLPROF_OUTPUT=a.stalls watchdog-trials fork CHILD-OUTPUT
//       Forks while the watchdog runs (and another thread floods markers); the child starts a watchdog of its own
//       writing CHILD-OUTPUT, marks `child 0` to `child 39`, stalls for 600 ms on its main queue, stops and exits 0.
//       The parent prints `parent pid: N` on stderr first and exits with the child's status (3 when the child's
//       watchdog could not start, e.g. on the parent's own path; 4 when the child was still running after 60 s:
//       killed, and where it waited printed; 5 when the fork or the wait failed) (Fork.swift).
//   STALLPROF_OUTPUT=a.stalls watchdog-trials own-poll [TIMEOUT-MS]
//       The app's own event loop on the main thread: poll a pipe (TIMEOUT-MS, default 50), then one turn of the
//       run loop.
//       After 2 s one poll at the same place blocks 800 ms: the main queue waits that long (a blocked stall).
//   STALLPROF_OUTPUT=a.stalls watchdog-trials idle-stop
//       The main thread idles in RunLoop.main; once the watchdog thread sleeps deeply (in epoll_wait on the run
//       loop's epoll set, for a threshold), another thread stops it, prints whether that sleep was seen and how
//       long stop() took, and exits 0.
//   STALLPROF_OUTPUT=a.stalls watchdog-trials futex-loop
//       An idle condition-variable loop watched at 100 ms beside an idle RunLoop.main: after the deep sleep, six
//       blocks that block at once for 150 ms, each an episode; a target added late, and the deep sleep again
//       (FutexLoop.swift).
//   STALLPROF_OUTPUT=a.stalls watchdog-trials main-sync
//       Under dispatchMain(), after 1.5 s idle, a thread of the app's own prints `sync caller: TID` on stderr and
//       calls DispatchQueue.main.sync with 600 ms of busy work: libdispatch runs the block on that thread (no pool
//       worker answers meanwhile), so that thread is the one to sample.
//   STALLPROF_OUTPUT=a.stalls watchdog-trials plain-post [IDLE-MS]
//       Under dispatchMain(), after IDLE-MS (default 1,500) idle, a thread of the app's own wakes from a plain sleep
//       and posts a block that sleeps 600 ms to the main queue (a blocked stall no dispatch timer or source
//       announced; a timer at the start has made libdispatch's event set, which the watchdog watches meanwhile).
//   STALLPROF_OUTPUT=a.stalls watchdog-trials timer-after-timer GAP-MS
//       Under dispatchMain(), a timer for another queue fires after 2 s idle, then GAP-MS later a main-queue timer
//       posts a block that sleeps 600 ms (a blocked stall that libdispatch's event set announces).
//   STALLPROF_OUTPUT=a.stalls watchdog-trials other-queue-busy
//       Under dispatchMain(), the worker that last ran the main queue spins 3 s for other queues while the main
//       queue stays idle: no saturated episode is due (OtherQueueBusy.swift; exit 7 when the work never landed).
//   STALLPROF_OUTPUT=a.stalls watchdog-trials signal-blocked
//       The main thread blocks the capture signal (pthread_sigmask), then its main queue spins for 1 s: a busy stall
//       the watchdog cannot sample with the signal; the capture records the thread's blocked-signal mask.
//   STALLPROF_OUTPUT=a.stalls watchdog-trials marker-flood
//       A thread floods markers while the main thread makes 3,000 in five busy stalls (MarkerFlood.swift).
//   STALLPROF_OUTPUT=a.stalls watchdog-trials close-own APP-DIR
//   STALLPROF_OUTPUT=a.stalls watchdog-trials closefrom APP-DIR
//       The app closes the watchdog's descriptors (exactly those, or everything from 3 up), opens six files of its
//       own on their numbers, stalls, stops the watchdog and checks its files (ClosedDescriptors.swift).
//   STALLPROF_OUTPUT=a.stalls watchdog-trials delete-capture
//       After 300 ms the app deletes its own capture file, then stalls its main queue 600 ms and stops.
//   watchdog-trials marker-noop      (no STALLPROF_OUTPUT: no watchdog)
//       StallMarker calls under a seccomp filter that kills the process on any system call but write and exit;
//       prints how many calls ran, and the heap allocations they made when count-allocations.c is preloaded
//       (MarkerNoop.swift).
//   STALLPROF_OUTPUT=a.stalls watchdog-trials handler-syscalls main|owner
//       The sampled thread (the main thread in a busy stall, or a mutex's owner the main thread waits for) runs
//       under a seccomp filter that kills the process on any system call but those docs/WATCHDOG.md lists for the
//       capture handler; exits 0 once it was sampled (HandlerSyscalls.swift).
//   STALLPROF_OUTPUT=a.stalls watchdog-trials plugins LIB [LIB2]
//       Blocked stalls whose lock owner (never prepared, unreadable memory above its stack) runs in a plugin's
//       code; with LIB2, LIB is unloaded and LIB2 loaded between the two stalls (Plugins.swift).
// Exit 0 when all went well; 2 for a usage error; for fork, 3 when the child could not start its watchdog, 4 when
// it hung, 5 when the fork or the wait failed.
import Dispatch
import Foundation
import StallProfiler
import StallSamples

/// Headroom left below the stack pointer when the deep recursion stops.
let headroomBytes: UInt = 8 * 1024

/// The lowest address the main thread's stack can grow to: the top of `[stack]` in /proc/self/maps less the
/// stack size limit (run this with a small `ulimit -s`).
func stackLowAddress() -> UInt {
    var limit = rlimit()
    getrlimit(__rlimit_resource_t(RLIMIT_STACK.rawValue), &limit)
    let maps = (try? FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/self/maps")).readToEnd()) ?? nil
    let text = String(decoding: maps ?? Data(), as: UTF8.self)
    guard let line = text.split(separator: "\n").first(where: { $0.hasSuffix("[stack]") }),
        let range = line.split(separator: " ").first, let end = range.split(separator: "-").last,
        let top = UInt(end, radix: 16), limit.rlim_cur < 1 << 30
    else {
        FileHandle.standardError.write(Data("watchdog-trials: run with a small ulimit -s\n".utf8))
        exit(2)
    }
    return top - UInt(limit.rlim_cur)
}

/// Recurses until less than ``headroomBytes`` of stack is left, then spins until `deadline`; returns the headroom
/// it spun with.
@inline(never)
func descendToHeadroom(low: UInt, until deadline: UInt64) -> UInt {
    var marker: UInt64 = 0
    let sp = withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) }
    if sp - low <= headroomBytes {
        while monotonicNanoseconds() < deadline { marker = marker &* 6364136223846793005 &+ 1 }
        return sp - low + UInt(marker & 0)
    }
    return descendToHeadroom(low: low, until: deadline) + UInt(marker & 0)
}

func finish(_ watchdog: StallWatchdog?, status: Int32) -> Never {
    watchdog?.stop()
    exit(status)
}

let arguments = Array(CommandLine.arguments.dropFirst())
// closefrom and plugins start their watchdog themselves, at a moment of their choosing.
let watchdog = ["closefrom", "plugins"].contains(arguments.first) ? nil : try? StallWatchdog.startFromEnvironment()
switch arguments.first {
case "small-stack":
    DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(300)) {
        let headroom = descendToHeadroom(low: stackLowAddress(), until: monotonicNanoseconds() + 600_000_000)
        print("spun with \(headroom) bytes of stack left")
        DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(300)) { finish(watchdog, status: 0) }
    }
case "fork" where arguments.count == 2:
    forkTrial(watchdog, childOutput: arguments[1])
case "own-poll":
    let timeout = arguments.count > 1 ? Int32(arguments[1]) ?? 50 : 50
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { exit(2) }
    let start = monotonicNanoseconds()
    var blocked = false
    while monotonicNanoseconds() < start + 3_500_000_000 {
        var entry = pollfd(fd: fds[0], events: Int16(POLLIN), revents: 0)
        let long = !blocked && monotonicNanoseconds() >= start + 2_000_000_000
        blocked = blocked || long
        _ = poll(&entry, 1, long ? 800 : timeout)
        _ = RunLoop.main.run(mode: .default, before: Date())
    }
    finish(watchdog, status: 0)
case "futex-loop":
    futexLoopTrial(watchdog)
case "idle-stop":
    Thread {
        let deep = WatchdogThread.waitForDeepSleep()  // at most 20 s
        let start = monotonicNanoseconds()
        watchdog?.stop()
        print("deep sleep seen: \(deep); stop took \((monotonicNanoseconds() - start) / 1_000_000) ms")
        exit(0)
    }.start()
case "main-sync":
    Thread {
        usleep(1_500_000)
        FileHandle.standardError.write(Data("sync caller: \(kernelThreadID())\n".utf8))
        DispatchQueue.main.sync { _ = BusyWork.spin(milliseconds: 600) }
        usleep(300_000)
        finish(watchdog, status: 0)
    }.start()
    dispatchMain()
case "plain-post":
    // A thread of the app's own, woken by a plain system call (no dispatch source or timer), posts a block that
    // blocks at once: neither the process's CPU nor libdispatch's event set announces it to a sleeping watchdog.
    let idleMs = arguments.count > 1 ? UInt32(arguments[1]) ?? 1500 : 1500
    // One timer early on, as most apps have: libdispatch makes its event set, which the watchdog then watches.
    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(100)) {}
    Thread {
        usleep(idleMs * 1000)
        DispatchQueue.main.async { usleep(600_000) }
        usleep(900_000)
        finish(watchdog, status: 0)
    }.start()
    dispatchMain()
case "timer-after-timer" where arguments.count == 2:
    // A timer for another queue wakes libdispatch's event set (and a sleeping watchdog) first; GAP ms later a
    // main-queue timer posts a block that sleeps 600 ms.
    let gapMs = Int(arguments[1]) ?? 300
    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(2000)) {}
    DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(2000 + gapMs)) {
        usleep(600_000)
        DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(300)) { finish(watchdog, status: 0) }
    }
    dispatchMain()
case "other-queue-busy":
    otherQueueBusyTrial(watchdog)
case "signal-blocked":
    DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(300)) {
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, watchdog?.configuration.signal ?? SIGPROF)
        pthread_sigmask(SIG_BLOCK, &blocked, nil)
        _ = BusyWork.spin(milliseconds: 1000)
        DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(300)) { finish(watchdog, status: 0) }
    }
case "marker-flood":
    markerFlood(watchdog)
case "close-own" where arguments.count == 2:
    closeOwn(watchdog, directory: arguments[1])
case "closefrom" where arguments.count == 2:
    closeFrom(directory: arguments[1])
case "delete-capture":
    DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(300)) {
        unlink(watchdog?.configuration.outputPath ?? "")
        _ = BusyWork.spin(milliseconds: 600)
        DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(300)) { finish(watchdog, status: 0) }
    }
case "marker-noop" where watchdog == nil:
    markerNoop()
case "handler-syscalls" where arguments.count == 2:
    handlerSyscalls(arguments[1], watchdog: watchdog)
case "plugins":
    plugins(Array(arguments.dropFirst()))
default:
    FileHandle.standardError.write(Data("usage: watchdog-trials small-stack | fork CHILD-OUTPUT | own-poll [TIMEOUT-MS] | idle-stop | main-sync | plain-post [IDLE-MS] | timer-after-timer GAP-MS | other-queue-busy | signal-blocked | marker-flood | delete-capture | close-own APP-DIR | closefrom APP-DIR | marker-noop | handler-syscalls main|owner | plugins LIB [LIB2]\n".utf8))
    exit(2)
}
RunLoop.main.run()
