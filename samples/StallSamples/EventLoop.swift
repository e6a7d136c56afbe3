import Foundation
import Glibc

/// One event-loop thread, shaped like SwiftNIO's `SelectableEventLoop`: a wait on its own epoll set (``Epoll``,
/// `epoll_wait` without a timeout), a pipe in it that `execute` writes to wake it, and a queue of tasks run between
/// events. Registered descriptors and their handlers belong to the loop thread alone. The event-loop sample serves
/// connections on such loops; the targets benchmark watches idle ones.
public final class EventLoop: @unchecked Sendable {
    /// The loop's number, and its thread's name (`loop-N`).
    public let index: Int
    /// The wake pipe: `execute` writes to [1], the loop waits on [0] with its descriptors.
    private var wake: [Int32] = [-1, -1]
    /// The set the loop waits on: the wake pipe's read end and the registered descriptors.
    private let events: Epoll
    private let lock = NSLock()
    /// Tasks `execute` queued; guarded by `lock`.
    private var tasks: [@Sendable () -> Void] = []
    /// What to do when a registered descriptor is readable; the loop thread's alone.
    private var handlers: [Int32: (Int32) -> Void] = [:]
    /// The loop thread's kernel id, once it runs.
    private let ready = DispatchSemaphore(value: 0)
    public private(set) nonisolated(unsafe) var threadID: Int32 = 0

    /// Starts loop `index`, its thread named `loop-N`; returns once the thread runs.
    public init(index: Int) {
        self.index = index
        precondition(pipe(&wake) == 0, "event-loop: cannot create the wake pipe: errno \(errno)")
        for fd in wake { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(wake[0], F_SETFL, O_NONBLOCK)
        guard let events = Epoll(), events.add(wake[0]) else { fatalError("event-loop: no epoll set: errno \(errno)") }
        self.events = events
        Thread { [self] in run() }.start()
        ready.wait()
    }

    /// Runs `task` on the loop thread, soon: what a watchdog target's ping calls (`{ loop.execute($0) }`).
    public func execute(_ task: @escaping @Sendable () -> Void) {
        lock.lock()
        tasks.append(task)
        lock.unlock()
        var one: UInt8 = 1
        _ = write(wake[1], &one, 1)
    }

    /// Watches `fd` for input on the loop thread, calling `handler` with it; call on the loop thread.
    public func register(_ fd: Int32, handler: @escaping (Int32) -> Void) {
        handlers[fd] = handler
        precondition(events.add(fd), "event-loop: cannot watch descriptor \(fd): errno \(errno)")
    }

    private func run() {
        threadID = kernelThreadID()
        // Named through /proc (Foundation's Thread.name does not reach the kernel, and Glibc's Swift module has no
        // pthread_setname_np), so snapshots and reports say which loop.
        try? "loop-\(index)".write(toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
        ready.signal()
        while true {
            let ready = events.wait()
            if ready.isEmpty && errno == EINTR {
                // The watchdog must never cut a wait short: said, so that tests see it.
                FileHandle.standardError.write(Data("event-loop: epoll_wait failed with EINTR\n".utf8))
            }
            for fd in ready {
                if fd == wake[0] {
                    var drained = [UInt8](repeating: 0, count: 64)
                    while read(fd, &drained, drained.count) > 0 {}
                    lock.lock()
                    let due = tasks
                    tasks.removeAll()
                    lock.unlock()
                    for task in due { task() }
                } else {
                    handlers[fd]?(fd)
                }
            }
        }
    }
}
