import CStallCapture

/// Which thread runs the main queue's work.
///
/// With `RunLoop.main.run()` it is always the process's first thread. With `dispatchMain()` or an async `@main`,
/// libdispatch drains the main queue on pool workers, usually the same one but not always. Every answered ping
/// names the thread that ran it and that thread's CPU time at the moment; at a stall's start this picks, among the
/// threads that answered recently and still exist, the one most likely running the stalled work: a thread that is
/// on a CPU or ready for one, else the one that used the most CPU since its last answer, else the latest answerer
/// (unless it has exited).
struct MainQueueThreads {
    private struct Answerer {
        var tid: Int32
        var cpuAtAnswer: UInt64
    }

    /// Most recently answering threads, latest last; at most ``capacity``.
    private var recent: [Answerer] = []
    /// How many distinct threads are remembered.
    let capacity = 8

    /// Notes that `tid` answered a ping with its CPU clock at `cpuNs`.
    mutating func answered(by tid: Int32, cpuNs: UInt64) {
        recent.removeAll { $0.tid == tid }
        recent.append(Answerer(tid: tid, cpuAtAnswer: cpuNs))
        if recent.count > capacity { recent.removeFirst() }
    }

    /// The thread to sample for a stall that begins now; `latest` (the last answerer) when nothing argues for
    /// another.
    func threadToSample(latest: Int32) -> Int32 {
        guard recent.count > 1 else { return latest }
        var best: (tid: Int32, running: Bool, progress: UInt64)? = nil
        for answerer in recent.reversed() {
            let cpu = stallcap_thread_cpu_ns(answerer.tid)
            guard cpu >= 0 else { continue }  // the thread has exited
            let progress = UInt64(cpu) &- min(UInt64(cpu), answerer.cpuAtAnswer)
            let running = Self.isRunnable(answerer.tid)
            if let current = best, (current.running ? 1 : 0, current.progress) >= (running ? 1 : 0, progress) {
                continue
            }
            best = (answerer.tid, running, progress)
        }
        guard let best else { return latest }
        let latestExited = stallcap_thread_cpu_ns(latest) < 0
        return best.running || best.progress > 1_000_000 || latestExited ? best.tid : latest
    }

    /// True when `/proc/self/task/<tid>/stat` says the thread is running or runnable (`R`).
    static func isRunnable(_ tid: Int32) -> Bool {
        stallcap_thread_state(tid) == CChar(UInt8(ascii: "R"))
    }
}
