#if canImport(Glibc)
import Glibc
#endif
import CStallCapture
import Dispatch

/// A flood of tiny main-queue blocks: no block is long, yet the main queue never gets to anything else (a timer's
/// ping waits behind thousands of them). A thread named `flood-poster` enqueues, each millisecond, 20 blocks that
/// each spin 0.2 ms: 4 ms of work per millisecond, four times what the main thread can do.
public enum FloodWork {
    /// The poster's thread name.
    public static let posterThreadName = "flood-poster"
    /// How long one block spins, microseconds.
    public static let blockMicroseconds: UInt64 = 200
    /// Blocks enqueued per millisecond.
    public static let blocksPerMillisecond = 20

    /// Starts the poster: for `milliseconds / 4` it enqueues blocks (the main queue then has about `milliseconds`
    /// of them to run), then enqueues `finish`, which runs after the last of them. Returns at once.
    public static func start(milliseconds: Int, then finish: @escaping @Sendable () -> Void) {
        let job = Job(milliseconds: max(1, milliseconds / 4), finish: finish)
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { context in
            let job = Unmanaged<Job>.fromOpaque(context!).takeRetainedValue()
            stallcap_name_thread(FloodWork.posterThreadName)
            FloodWork.post(milliseconds: job.milliseconds)
            DispatchQueue.main.async(execute: job.finish)
            return nil
        }, Unmanaged.passRetained(job).toOpaque())
        precondition(created == 0, "pthread_create failed")
        pthread_detach(thread)
    }

    /// Enqueues ``blocksPerMillisecond`` blocks onto the main queue each millisecond for `milliseconds`.
    @inline(never)
    static func post(milliseconds: Int) {
        var next = timespec()
        clock_gettime(CLOCK_MONOTONIC, &next)
        for _ in 0..<milliseconds {
            for _ in 0..<blocksPerMillisecond {
                DispatchQueue.main.async { FloodWork.tinyBlock() }
            }
            next.tv_nsec += 1_000_000
            if next.tv_nsec >= 1_000_000_000 {
                next.tv_nsec -= 1_000_000_000
                next.tv_sec += 1
            }
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nil) == EINTR {}
        }
    }

    /// One block's work: spins ``blockMicroseconds``.
    @inline(never)
    public static func tinyBlock() {
        _ = BusyWork.burn(until: monotonicNanoseconds() + blockMicroseconds * 1000)
    }

    private final class Job: Sendable {
        let milliseconds: Int
        let finish: @Sendable () -> Void
        init(milliseconds: Int, finish: @escaping @Sendable () -> Void) {
            self.milliseconds = milliseconds
            self.finish = finish
        }
    }
}
