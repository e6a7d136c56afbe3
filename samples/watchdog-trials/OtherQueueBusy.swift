// watchdog-trials other-queue-busy: under dispatchMain(), the pool worker that last ran the main queue goes on to
// 3 s of CPU work for another queue while the main queue stays idle. That is not the main queue's saturation.
import Dispatch
import Foundation
import StallProfiler
import StallSamples
import Synchronization

/// After 1.5 s idle, one 150 ms main-queue block (long enough that a check finds the queue busy and pings it, so its
/// worker answers); then jobs on private serial queues (the same overcommit pool) until one lands on that worker,
/// which spins 3 s there. Exits 0 when it landed, 7 when it never did within 10 s.
func otherQueueBusyTrial(_ watchdog: StallWatchdog?) -> Never {
    DispatchQueue.main.asyncAfter(deadline: .now() + 1.5) {
        let worker = kernelThreadID()
        _ = BusyWork.spin(milliseconds: 150)
        OtherQueuePoster(worker: worker, watchdog: watchdog).post(round: 0)
        DispatchQueue.global().asyncAfter(deadline: .now() + 10) { finish(watchdog, status: 7) }
    }
    dispatchMain()
}

/// Posts rounds of small jobs on private serial queues until one runs on `worker`, which then spins 3 s.
final class OtherQueuePoster: Sendable {
    let worker: Int32
    let watchdog: StallWatchdog?
    let landed = Atomic<Bool>(false)

    init(worker: Int32, watchdog: StallWatchdog?) {
        self.worker = worker
        self.watchdog = watchdog
    }

    func post(round: Int) {
        guard !landed.load(ordering: .relaxed), round < 500 else { return }
        for i in 0..<6 {
            DispatchQueue(label: "other-queue.\(round).\(i)").async { [self] in
                guard kernelThreadID() == worker, !landed.exchange(true, ordering: .relaxed) else {
                    _ = BusyWork.spin(milliseconds: 3)
                    return
                }
                FileHandle.standardError.write(Data("other queue's work on \(worker)\n".utf8))
                _ = BusyWork.spin(milliseconds: 3000)
                usleep(500_000)
                finish(watchdog, status: 0)
            }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(20)) { [self] in post(round: round + 1) }
    }
}
