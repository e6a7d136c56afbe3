import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The waits, one function each. Every helper thread sleeps in a system call while the main thread waits, so the
/// stall is blocked, never busy.
final class Shapes: @unchecked Sendable {
    /// Every shape's name, as the command line takes it.
    static let all = [
        "mutex", "sync", "semaphore", "group", "cond", "cond-retake", "join", "rwlock", "pipe", "socket", "sleep", "deadlock", "self-wait",
    ]
    /// The shapes that never end by themselves.
    static let endless: Set<String> = ["deadlock", "self-wait"]

    let microseconds: useconds_t
    let serial = DispatchQueue(label: "com.example.db")

    init(milliseconds: Int) { microseconds = useconds_t(milliseconds) * 1000 }

    /// Runs the named shape on the main thread.
    func run(_ name: String) {
        switch name {
        case "mutex": waitForMutex()
        case "sync": syncOntoBusyQueue()
        case "semaphore": waitForReply()
        case "group": waitForGroup()
        case "cond": waitForCondition()
        case "cond-retake": retakeConditionMutex()
        case "join": joinWorker()
        case "rwlock": readLockedTable()
        case "pipe": readPipe()
        case "socket": readBothEnds()
        case "sleep": sleepOnMain()
        case "deadlock": lockInOrderAB()
        default: waitForMainActor()
        }
    }

    /// Starts a thread named `name` (its `comm`, as /proc and debuggers show it) running `body`; detached unless
    /// `joinable` (then the caller joins it).
    @discardableResult
    static func spawn(_ name: String, joinable: Bool = false, _ body: @escaping () -> Void) -> pthread_t {
        final class Start: @unchecked Sendable {
            let body: () -> Void
            let name: String
            init(_ body: @escaping () -> Void, _ name: String) { (self.body, self.name) = (body, name) }
        }
        let start = Unmanaged.passRetained(Start(body, name)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { raw in
            let start = Unmanaged<Start>.fromOpaque(raw!).takeRetainedValue()
            let comm = open("/proc/thread-self/comm", O_WRONLY)
            if comm >= 0 {
                _ = start.name.withCString { write(comm, $0, strlen($0)) }
                close(comm)
            }
            start.body()
            return nil
        }, start)
        precondition(status == 0, "pthread_create: \(status)")
        if !joinable { pthread_detach(thread) }
        return thread
    }

    /// A heap mutex (a Swift `var` may move; a lock must not).
    static func newMutex() -> UnsafeMutablePointer<pthread_mutex_t> {
        let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        return mutex
    }

    /// A heap mutex, condition variable and flag (false) for a condition wait.
    static func newCondition() -> (
        UnsafeMutablePointer<pthread_mutex_t>, UnsafeMutablePointer<pthread_cond_t>, UnsafeMutablePointer<Bool>
    ) {
        let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        pthread_cond_init(condition, nil)
        let done = UnsafeMutablePointer<Bool>.allocate(capacity: 1)
        done.initialize(to: false)
        return (newMutex(), condition, done)
    }

    /// Destroys and frees what ``newCondition()`` made.
    static func free(
        _ mutex: UnsafeMutablePointer<pthread_mutex_t>, _ condition: UnsafeMutablePointer<pthread_cond_t>,
        _ done: UnsafeMutablePointer<Bool>
    ) {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
        done.deallocate()
    }

    /// Waits `microseconds` in one nanosleep on the calling thread, and says on standard error when the sleep was
    /// cut short (the watchdog must never signal a thread asleep in a system call).
    func nap(_ fraction: Double = 1) {
        let asked = UInt64(Double(microseconds) * fraction)
        let start = Self.monotonicMicroseconds()
        usleep(useconds_t(asked))
        let slept = Self.monotonicMicroseconds() - start
        if slept < asked { Self.complain("a sleep was cut short: \(slept) of \(asked) us") }
    }

    /// A blocking call's result, checked: an EINTR (a signal reached the thread in the call) is said on stderr.
    static func checked(_ result: Int, _ call: String) {
        if result < 0 && errno == EINTR { complain("\(call) failed with EINTR") }
    }

    static func complain(_ text: String) {
        FileHandle.standardError.write(Data("wait-shapes: \(text)\n".utf8))
    }

    static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
    }

    @inline(never) func waitForMutex() {
        let mutex = Self.newMutex()
        let held = DispatchSemaphore(value: 0)
        Self.spawn("db-worker") { [self] in
            pthread_mutex_lock(mutex)
            held.signal()
            nap()
            pthread_mutex_unlock(mutex)
        }
        held.wait()
        pthread_mutex_lock(mutex)
        pthread_mutex_unlock(mutex)
        usleep(50_000)  // the worker has unlocked and returned
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inline(never) func syncOntoBusyQueue() {
        let started = DispatchSemaphore(value: 0)
        serial.async { [self] in
            started.signal()
            nap()
        }
        started.wait()
        serial.sync { _ = 1 }
    }

    @inline(never) func waitForReply() {
        var pair: [Int32] = [0, 0]
        precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        let reply = DispatchSemaphore(value: 0)
        let (reading, writing) = (pair[0], pair[1])
        Self.spawn("io-reader") {
            var byte: UInt8 = 0
            Self.checked(read(reading, &byte, 1), "read")
            reply.signal()
        }
        Self.spawn("io-writer") { [self] in
            nap()
            var byte: UInt8 = 1
            _ = write(writing, &byte, 1)
        }
        _ = reply.wait(timeout: .now() + .seconds(60))
        close(reading)
        close(writing)
    }

    @inline(never) func waitForGroup() {
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) { [self] in nap() }
        group.wait()
    }

    @inline(never) func waitForCondition() {
        let (mutex, condition, done) = Self.newCondition()
        Self.spawn("signaller") { [self] in
            nap()
            pthread_mutex_lock(mutex)
            done.pointee = true
            pthread_cond_signal(condition)
            pthread_mutex_unlock(mutex)
        }
        pthread_mutex_lock(mutex)
        while !done.pointee { pthread_cond_wait(condition, mutex) }
        pthread_mutex_unlock(mutex)
        usleep(50_000)  // the signaller has unlocked and returned
        Self.free(mutex, condition, done)
    }

    /// Woken from `pthread_cond_wait` by `signaller`, which then keeps the mutex for --ms: the main thread waits
    /// inside `pthread_cond_wait` for the mutex it re-takes, owned by `signaller`.
    @inline(never) func retakeConditionMutex() {
        let (mutex, condition, done) = Self.newCondition()
        pthread_mutex_lock(mutex)
        Self.spawn("signaller") { [self] in
            pthread_mutex_lock(mutex)  // only once the main thread waits (it releases the mutex then)
            done.pointee = true
            pthread_cond_signal(condition)
            nap()
            pthread_mutex_unlock(mutex)
        }
        while !done.pointee { pthread_cond_wait(condition, mutex) }
        pthread_mutex_unlock(mutex)
        usleep(50_000)  // the signaller has unlocked and returned
        Self.free(mutex, condition, done)
    }

    @inline(never) func joinWorker() {
        let thread = Self.spawn("joined-worker", joinable: true) { [self] in nap() }
        pthread_join(thread, nil)
    }

    @inline(never) func readLockedTable() {
        let lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
        pthread_rwlock_init(lock, nil)
        let held = DispatchSemaphore(value: 0)
        Self.spawn("db-writer") { [self] in
            pthread_rwlock_wrlock(lock)
            held.signal()
            nap()
            pthread_rwlock_unlock(lock)
        }
        held.wait()
        pthread_rwlock_rdlock(lock)
        pthread_rwlock_unlock(lock)
        usleep(50_000)  // the writer has unlocked and returned
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    @inline(never) func readPipe() {
        var fds: [Int32] = [0, 0]
        precondition(pipe(&fds) == 0)
        let writing = fds[1]
        Self.spawn("pipe-writer") { [self] in
            nap()
            var byte: UInt8 = 1
            _ = write(writing, &byte, 1)
        }
        var byte: UInt8 = 0
        Self.checked(read(fds[0], &byte, 1), "read")
        close(fds[0])
        close(fds[1])
    }

    /// Both ends of a socketpair read: the main thread waits for a reply on one end while `socket-peer` waits for a
    /// request on the other (a protocol mix-up); `log-drain` reads an unrelated pipe. After --ms `socket-feeder`
    /// writes to both ends and to the pipe.
    @inline(never) func readBothEnds() {
        var pair: [Int32] = [0, 0], logs: [Int32] = [0, 0]
        precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 && pipe(&logs) == 0)
        let (mine, theirs, drained, logged) = (pair[0], pair[1], logs[0], logs[1])
        let read1 = { (fd: Int32) in
            var byte: UInt8 = 0
            Self.checked(read(fd, &byte, 1), "read")
        }
        Self.spawn("log-drain") { read1(drained) }
        Self.spawn("socket-peer") { read1(theirs) }
        Self.spawn("socket-feeder") { [self] in
            nap()
            var byte: UInt8 = 1
            for fd in [theirs, mine, logged] { _ = write(fd, &byte, 1) }  // main's reply, the peer's request, a log
        }
        read1(mine)
        usleep(50_000)  // the helpers have read
        for fd in pair + logs { close(fd) }
    }

    @inline(never) func sleepOnMain() { nap() }

    @inline(never) func lockInOrderAB() {
        let (a, b) = (Self.newMutex(), Self.newMutex())
        let bHeld = DispatchSemaphore(value: 0)
        Self.spawn("db-worker") {
            pthread_mutex_lock(b)
            bHeld.signal()
            usleep(100_000)
            Self.lockInOrderBA(a)
        }
        pthread_mutex_lock(a)
        bHeld.wait()
        usleep(50_000)
        pthread_mutex_lock(b)
    }

    @inline(never) static func lockInOrderBA(_ a: UnsafeMutablePointer<pthread_mutex_t>) { pthread_mutex_lock(a) }

    @inline(never) func waitForMainActor() {
        let done = DispatchSemaphore(value: 0)
        Task { @MainActor in done.signal() }
        done.wait()
    }
}
