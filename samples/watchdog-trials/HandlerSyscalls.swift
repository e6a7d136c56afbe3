// watchdog-trials handler-syscalls main|owner: the capture handler makes exactly the system calls docs/WATCHDOG.md
// lists, checked from inside. The sampled thread confines itself with a seccomp filter that kills the whole process
// (SIGSYS) on any system call but those (clock_gettime, which the vDSO normally serves without one, and
// rt_sigreturn, the return from any signal handler), then spins in code that makes none: every handler that runs
// on it from then on, its first one included, runs under the filter. Another thread, not confined, waits for the
// samples, stops the watchdog (which flushes the capture), reports on stderr and ends the process.
//   main:  the main thread (warmed up by answering pings: alternate signal stack, known stack bounds) stalls busy.
//   owner: a thread that never answered a ping (no alternate stack, unknown bounds) holds a mutex and spins; the
//          main thread blocks on that mutex, and the watchdog samples the owner once with the signal.
import CStallCapture
import Foundation
import StallProfiler
import StallSamples

/// What the sampled thread may call; everything else kills the process.
private let handlerCalls = [SystemCall.clockGettime, SystemCall.rtSigreturn]

/// Spins for ever in a recursion `BusyWork.depth` deep, making no system call (its clock is the vDSO's).
private func spinConfined() -> Never {
    guard confineThread(allowing: handlerCalls) else {
        FileHandle.standardError.write(Data("watchdog-trials: cannot install the seccomp filter\n".utf8))
        _exit(3)
    }
    while true { _ = BusyWork.spin(milliseconds: 1_000_000) }
}

/// Waits (at most 30 s) until `enough` holds, then stops the watchdog and ends the process with a report.
private func finishWhen(_ watchdog: StallWatchdog, _ enough: @escaping @Sendable (StallWatchdog.Statistics) -> Bool) {
    Thread {
        let start = monotonicNanoseconds()
        while !enough(watchdog.statistics) && monotonicNanoseconds() - start < 30_000_000_000 { usleep(10_000) }
        let statistics = watchdog.statistics
        watchdog.stop()
        FileHandle.standardError.write(Data(
            "handler-syscalls: \(statistics.stalls) stalls, \(statistics.samples) samples, confined thread alive\n".utf8))
        _exit(enough(statistics) ? 0 : 1)
    }.start()
}

func handlerSyscalls(_ mode: String, watchdog: StallWatchdog?) {
    guard let watchdog, mode == "main" || mode == "owner" else {
        FileHandle.standardError.write(Data("usage: STALLPROF_OUTPUT=PATH watchdog-trials handler-syscalls main|owner\n".utf8))
        exit(2)
    }
    if mode == "main" {
        finishWhen(watchdog) { $0.stalls >= 1 && $0.samples >= 40 }
        DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(300)) { spinConfined() }
        return
    }
    nonisolated(unsafe) let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    pthread_mutex_init(mutex, nil)
    let taken = DispatchSemaphore(value: 0)
    let owner = Thread {
        stallcap_name_thread(BlockedWork.holderThreadName)
        pthread_mutex_lock(mutex)
        taken.signal()
        spinConfined()
    }
    // The owner is probed once the stall is detected; a few samples later the probe (and its signal to the owner) is
    // done. The count includes the presamples taken before detection (about 30 at 5 ms over the 150 ms threshold):
    // stopping at 8 samples stopped the watchdog before the probe once (CI).
    finishWhen(watchdog) { $0.stalls >= 1 && $0.samples >= 60 }
    DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(300)) {
        owner.start()
        taken.wait()
        pthread_mutex_lock(mutex)  // blocks for ever: the owner never unlocks
    }
}
