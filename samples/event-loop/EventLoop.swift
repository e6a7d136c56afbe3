import Foundation
import StallSamples
import Glibc

/// One event-loop thread, shaped like SwiftNIO's `SelectableEventLoop`: a wait on its own descriptors (`poll`,
/// where NIO uses epoll, which Glibc's Swift module does not export), a pipe that `execute` writes to wake it, and
/// a queue of tasks run between events. Registered descriptors and their handlers belong to the loop thread alone.
final class EventLoop: @unchecked Sendable {
    /// The loop's number, and its thread's name (`loop-N`).
    let index: Int
    /// The wake pipe: `execute` writes to [1], the loop waits on [0] with its descriptors.
    private var wake: [Int32] = [-1, -1]
    /// The descriptors the loop waits on, the wake pipe's first; the loop thread's alone.
    private var watched: [pollfd] = []
    private let lock = NSLock()
    /// Tasks `execute` queued; guarded by `lock`.
    private var tasks: [@Sendable () -> Void] = []
    /// What to do when a registered descriptor is readable; the loop thread's alone.
    private var handlers: [Int32: (Int32) -> Void] = [:]
    /// The loop thread's kernel id, once it runs.
    private let ready = DispatchSemaphore(value: 0)
    private(set) nonisolated(unsafe) var threadID: Int32 = 0

    init(index: Int) {
        self.index = index
        precondition(pipe(&wake) == 0, "event-loop: cannot create the wake pipe: errno \(errno)")
        for fd in wake { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(wake[0], F_SETFL, O_NONBLOCK)
        watched = [pollfd(fd: wake[0], events: Int16(POLLIN), revents: 0)]
        Thread { [self] in run() }.start()
        ready.wait()
    }

    /// Runs `task` on the loop thread, soon: what a watchdog target's ping calls (`{ loop.execute($0) }`).
    func execute(_ task: @escaping @Sendable () -> Void) {
        lock.lock()
        tasks.append(task)
        lock.unlock()
        var one: UInt8 = 1
        _ = write(wake[1], &one, 1)
    }

    /// Watches `fd` for input on the loop thread, calling `handler` with it; call on the loop thread.
    func register(_ fd: Int32, handler: @escaping (Int32) -> Void) {
        handlers[fd] = handler
        watched.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0))
    }

    private func run() {
        threadID = kernelThreadID()
        // Named through /proc (Foundation's Thread.name does not reach the kernel, and Glibc's Swift module has no
        // pthread_setname_np), so snapshots and reports say which loop.
        try? "loop-\(index)".write(toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
        ready.signal()
        while true {
            let count = poll(&watched, nfds_t(watched.count), -1)
            if count < 0 && errno == EINTR {
                // The watchdog must never cut a wait short: said, so that tests see it.
                FileHandle.standardError.write(Data("event-loop: poll failed with EINTR\n".utf8))
            }
            guard count > 0 else { continue }
            for entry in watched where entry.revents != 0 {
                let fd = entry.fd
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
