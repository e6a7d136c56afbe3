import CStallCapture
import StallFormat

/// Finds the threads of Swift's cooperative pool when it is starved (``StallTarget/cooperativePool(threshold:priority:)``).
/// On Linux the pool's jobs run on libdispatch's root-queue workers of the job's priority (each named after its
/// queue, `com.apple.root.default-qos` cut to its last 15 bytes), which also run `DispatchQueue.global()` blocks of
/// that priority: a sleeping global block holds a thread the pool's jobs wait for (measured: with one such block
/// and one busy job on 2 CPUs, a third task began 700 ms late). So a pool thread is a worker of the pool's root
/// queue that runs work when the starvation is detected: its stack has a libdispatch frame that called code
/// outside libdispatch and the C library (the job, or the block). An idle worker's libdispatch frames call only
/// the C library (its wait for work). The stack is the first sample of the thread's episode.
enum PoolThreads {
    /// What tells a worker running work, found once on the app's thread (the lookup takes the loader's lock).
    struct Code: Sendable {
        /// libdispatch's code and the C library's; nil when either is unknown (no libdispatch, or linked into the
        /// executable): then every worker of the pool's queue is taken for a pool thread.
        let dispatch: Range<UInt>?, libc: Range<UInt>?
        /// The label of the root queue whose workers run the pinged priority's jobs (`com.apple.root.default-qos`).
        let rootQueue: String

        /// The running process's, for jobs of `priority`.
        static func current(priority: TaskPriority) -> Code {
            var code = stallcap_worker_code_t()
            let known = stallcap_worker_code(&code) == 0
            return Code(
                dispatch: known ? UInt(code.dispatch_lo)..<UInt(code.dispatch_hi) : nil,
                libc: known ? UInt(code.libc_lo)..<UInt(code.libc_hi) : nil,
                rootQueue: "com.apple.root.\(qosName(priority))-qos")
        }

        /// libdispatch's name for the quality of service of `priority` (Swift's raw priorities are QoS classes).
        static func qosName(_ priority: TaskPriority) -> String {
            switch priority.rawValue {
            case 0x21...: "user-interactive"
            case 0x19...: "user-initiated"
            case 0x15...: "default"
            case 0x11...: "utility"
            default: "background"
            }
        }

        /// True when `sample`'s frames (innermost first) show a worker running work:
        /// - the thread is libdispatch's worker: its outermost libdispatch frame has at most one frame outside the C
        ///   library beyond it (a sanitizer's thread start; `clone` and `start_thread` are the C library's), where a
        ///   thread that merely inherited a worker's name from the task that created it (a reviewer's case: a
        ///   `Thread` started in a task, inside `queue.sync`) has its own code there;
        /// - and a libdispatch frame called code that is neither libdispatch's nor the C library's and is more than
        ///   one frame deep before it calls libdispatch again: the job's or the block's. An idle worker's libdispatch
        ///   frames call the C library's wait for work, or a sanitizer's interceptor of it or of libdispatch's
        ///   semaphore (one frame). A C function queued with `dispatch_async_f` that blocks in the C library at
        ///   once is one frame too, and is missed.
        /// A truncated stack is work (an idle worker's is short); a stack without a libdispatch frame is work only
        /// when it was taken with the signal (the thread ran) and its walk stopped. Without the code known: true.
        func runsWork(_ sample: SampleRecord) -> Bool {
            let frames = sample.frames
            guard !frames.isEmpty else { return false }
            guard let dispatch, let libc else { return true }
            if sample.flags.contains(.truncated) { return true }
            func inDispatch(_ pc: UInt64) -> Bool { pc > UInt64(dispatch.lowerBound) && pc <= UInt64(dispatch.upperBound) }
            func inLibc(_ pc: UInt64) -> Bool { pc > UInt64(libc.lowerBound) && pc <= UInt64(libc.upperBound) }
            guard let outermost = frames.lastIndex(where: inDispatch) else {
                // No libdispatch frame, where every worker has its own: a walk that stopped in code it could not
                // leave, on a thread that was running (signalled) is busy work; otherwise the stack is another
                // thread's, or one read from memory whose scan missed libdispatch's frames (seen under ASan: a
                // stray Thread's sync block then looked like a worker's block).
                let stopped: SampleFlags = [.walkStoppedNoUnwindInfo, .walkStoppedFramePointer, .walkStoppedUnusable]
                return sample.flags.isSignalled && !sample.flags.isDisjoint(with: stopped)
            }
            guard frames[(outermost + 1)...].filter({ !inLibc($0) }).count <= 1 else { return false }
            // frames[i] returns into libdispatch, frames[i - 1] is the code it called: that code's frames run inward
            // to the next libdispatch frame (a sanitizer intercepts some libdispatch calls too: ThreadSanitizer's
            // dispatch_semaphore_wait is the idle worker's callee there, and calls libdispatch back).
            return frames.indices.dropFirst().contains { i in
                guard inDispatch(frames[i]), !inDispatch(frames[i - 1]), !inLibc(frames[i - 1]) else { return false }
                return frames[0..<i].reversed().prefix { !inDispatch($0) }.filter { !inLibc($0) }.count >= 2
            }
        }

        /// True for the name (`comm`) of a worker of ``rootQueue``: the label's last 15 bytes at most (the kernel
        /// keeps no more). Overcommit workers (serial queues', named `…qos.overcommit`) never run the pool's jobs.
        func isWorker(name: String) -> Bool { !name.isEmpty && rootQueue.hasSuffix(name) && name.hasSuffix("-qos") }
    }

    /// Most threads looked at when the pool starves.
    static let maxThreads = 512

    /// The workers of `code`'s root queue now, but `excluding` (the main and watchdog threads).
    static func workers(_ code: Code, excluding: Set<Int32>) -> [Int32] {
        var tids = [Int32](repeating: 0, count: maxThreads)
        var total: Int32 = 0
        let listed = tids.withUnsafeMutableBufferPointer {
            stallcap_list_threads($0.baseAddress, Int32($0.count), &total)
        }
        return tids.prefix(Int(max(0, listed))).filter { tid in
            !excluding.contains(tid) && code.isWorker(name: BlockedOnProbe.threadName(tid))
        }
    }
}
