import Foundation
import StallProfiler
import StallSamples

/// futex-loop: an idle loop thread waiting on a condition variable (SerialThread: a futex wait, whose wake no
/// descriptor announces), watched at 100 ms beside an idle RunLoop.main. Once the watchdog sleeps deeply, six
/// blocks that block at once for 150 ms (1.5 thresholds: a loop woken for them runs too little for a CPU timer)
/// are posted 600 ms apart: each must be an episode (a rest as long as a threshold lost some of them). Then a
/// second target is added to the running watchdog, and it must sleep deeply again (the add's wake of the deep
/// sleep was once never drained). Every ping closure says when it runs with the capture signal blocked (the deep
/// sleep blocks it on the watchdog thread, which must release it before running app code). Prints
/// `deep sleep seen: B` and `deep sleep after add: B`; exits 0.
func futexLoopTrial(_ watchdog: StallWatchdog?) {
    guard let watchdog else {
        FileHandle.standardError.write(Data("futex-loop: no watchdog (set STALLPROF_OUTPUT)\n".utf8))
        exit(2)
    }
    let signal = watchdog.configuration.signal
    @Sendable func ping(_ loop: SerialThread) -> @Sendable (@escaping @Sendable () -> Void) -> Void {
        { block in
            var mask = sigset_t()
            pthread_sigmask(SIG_SETMASK, nil, &mask)
            if sigismember(&mask, signal) == 1 {
                FileHandle.standardError.write(Data("futex-loop: a ping ran with the capture signal blocked\n".utf8))
            }
            loop.post(block)
        }
    }
    let loop = SerialThread(name: "futex-loop"), second = SerialThread(name: "second-loop")
    try! watchdog.add(.executor("loop", threshold: .milliseconds(100), ping: ping(loop)))
    Thread {
        print("deep sleep seen: \(WatchdogThread.waitForDeepSleep(seconds: 15))")
        for _ in 0..<6 {
            loop.post { usleep(150_000) }
            usleep(600_000)
        }
        try! watchdog.add(.executor("second", threshold: .milliseconds(100), ping: ping(second)))
        usleep(300_000)  // taken, and learned
        print("deep sleep after add: \(WatchdogThread.waitForDeepSleep(seconds: 15))")
        fflush(nil)
        DispatchQueue.main.async { finish(watchdog, status: 0) }
    }.start()
}
