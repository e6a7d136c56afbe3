// watchdog-trials fork: a process that forks while its watchdog runs (and another thread floods markers); the
// child starts a watchdog of its own.
import Dispatch
import Foundation
import StallProfiler
import StallSamples

/// How long the parent waits for its child before it calls the child stuck.
let forkChildLimitNs: UInt64 = 60_000_000_000

/// Runs the `fork` trial: forks at a moment the watchdog thread sleeps; the child starts a watchdog writing
/// `childOutput`, marks `child 0` to `child 39`, stalls 600 ms on its main queue, stops and exits 0; the parent
/// exits with the child's status, or 4 (after printing where the child waits, and killing it) when the child is
/// still running after a minute: a child that inherited a lock held at the fork (the Swift runtime's, say) never
/// ends, and the trial must end all the same. 5 when the fork or the wait failed.
func forkTrial(_ watchdog: StallWatchdog?, childOutput: String) -> Never {
    FileHandle.standardError.write(Data("parent pid: \(getpid())\n".utf8))
    // Markers on both sides: the parent's main thread has a ring, and another thread floods while the process
    // forks; the child's rings (and the shared one) must start empty and free.
    StallMarker.mark("parent")
    Thread { while !floodStop.load(ordering: .relaxed) { StallMarker.mark("parent flood") } }.start()
    // Not in the watchdog thread's first moments, nor while it works: a fork while that thread holds a lock of the
    // Swift runtime (it instantiates type metadata as it starts, and on the first use of each path) leaves the lock
    // held forever in the child. So 300 ms after the start (the main thread sleeps: a stall, sampled, from 150 ms
    // on), and once the thread is seen asleep in a system call. (The run loop must not have run before the fork:
    // the child's main queue would never be served.)
    usleep(300_000)
    waitUntilTheWatchdogSleeps()
    let child = fork()
    guard child >= 0 else {
        FileHandle.standardError.write(Data("fork failed: errno \(errno)\n".utf8))
        finish(watchdog, status: 5)
    }
    if child == 0 {
        // The child: only this thread exists. It must be able to start a watchdog of its own.
        let own: StallWatchdog
        do { own = try StallWatchdog.start(.init(threshold: .milliseconds(150), sampleInterval: .milliseconds(5),
                                                 outputPath: childOutput)) } catch {
            FileHandle.standardError.write(Data("child: \(error)\n".utf8))
            _exit(3)
        }
        for index in 0..<40 { StallMarker.mark("child \(index)") }  // more than its ring holds
        DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(300)) {
            _ = BusyWork.spin(milliseconds: 600)
            DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(300)) {
                own.stop()
                _exit(0)
            }
        }
        RunLoop.main.run()
        _exit(5)  // never: the stall's last block exits
    }
    floodStop.store(true, ordering: .relaxed)
    let start = monotonicNanoseconds()
    var status: Int32 = 0
    var reaped = waitpid(child, &status, WNOHANG)
    while reaped == 0 || (reaped < 0 && errno == EINTR) {
        if monotonicNanoseconds() - start > forkChildLimitNs {
            let call = (try? String(contentsOfFile: "/proc/\(child)/syscall", encoding: .utf8)) ?? "?"
            let wchan = (try? String(contentsOfFile: "/proc/\(child)/wchan", encoding: .utf8)) ?? "?"
            FileHandle.standardError.write(Data("child stuck after 60 s: syscall \(call.prefix(40)), wchan \(wchan)\n".utf8))
            kill(child, SIGKILL)
            waitpid(child, &status, 0)
            finish(watchdog, status: 4)
        }
        usleep(10_000)
        reaped = waitpid(child, &status, WNOHANG)
    }
    guard reaped == child else { finish(watchdog, status: 5) }
    finish(watchdog, status: (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f))
}

/// Returns once the watchdog thread is seen blocked in a system call that sleeps (futex, nanosleep,
/// clock_nanosleep, epoll or poll), or after 5 s.
func waitUntilTheWatchdogSleeps() {
    // x86_64: futex 202, nanosleep 35, clock_nanosleep 230, epoll_wait 232, epoll_pwait 281, poll 7, ppoll 271;
    // aarch64: futex 98, nanosleep 101, clock_nanosleep 115, epoll_pwait 22, ppoll 73.
    #if arch(x86_64)
    let sleeping: Set<Substring> = ["202", "35", "230", "232", "281", "7", "271"]
    #else
    let sleeping: Set<Substring> = ["98", "101", "115", "22", "73"]
    #endif
    let deadline = monotonicNanoseconds() + 5_000_000_000
    while monotonicNanoseconds() < deadline {
        if let call = WatchdogThread.syscall(), sleeping.contains(call) { return }
        usleep(1_000)
    }
}
