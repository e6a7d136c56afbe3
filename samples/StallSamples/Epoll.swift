import Glibc

/// An epoll set, as SwiftNIO's event loops wait in: Glibc's Swift module exports no epoll, and the samples use no C
/// shim, so the three calls are looked up in the C library (`dlsym`) once. Event loops (``EpollLoop``, the
/// event-loop sample's) wait in it with `epoll_wait` and no timeout, the wait the watchdog's deep sleep can watch.
public struct Epoll: Sendable {
    /// The set's descriptor.
    public let fd: Int32

    private typealias Create = @convention(c) (Int32) -> Int32
    private typealias Control = @convention(c) (Int32, Int32, Int32, UnsafeMutableRawPointer?) -> Int32
    private typealias Wait = @convention(c) (Int32, UnsafeMutableRawPointer?, Int32, Int32) -> Int32

    private struct Calls: @unchecked Sendable {
        let create: Create, control: Control, wait: Wait
    }

    private static let calls: Calls = {
        func look<T>(_ name: String, _ type: T.Type) -> T {
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {
                fatalError("epoll: the C library has no \(name)")
            }
            return unsafeBitCast(symbol, to: type)
        }
        return Calls(
            create: look("epoll_create1", Create.self), control: look("epoll_ctl", Control.self),
            wait: look("epoll_wait", Wait.self))
    }()

    /// The size of `struct epoll_event` and the offset of its data: packed on x86_64, aligned elsewhere.
    #if arch(x86_64)
    private static let eventSize = 12, dataOffset = 4
    #else
    private static let eventSize = 16, dataOffset = 8
    #endif

    /// A new set (close-on-exec); nil when the kernel refuses.
    public init?() {
        let fd = Self.calls.create(Int32(O_CLOEXEC))
        guard fd >= 0 else { return nil }
        self.fd = fd
    }

    /// Adds `descriptor` for input (level-triggered, NIO's default); false on failure.
    public func add(_ descriptor: Int32) -> Bool {
        var event = [UInt8](repeating: 0, count: Self.eventSize)
        event.withUnsafeMutableBytes { bytes in
            bytes.storeBytes(of: UInt32(1) /* EPOLLIN */, toByteOffset: 0, as: UInt32.self)
            bytes.storeBytes(of: UInt64(UInt32(bitPattern: descriptor)), toByteOffset: Self.dataOffset, as: UInt64.self)
        }
        return event.withUnsafeMutableBytes { Self.calls.control(fd, 1 /* EPOLL_CTL_ADD */, descriptor, $0.baseAddress) } == 0
    }

    /// Waits without a timeout until some descriptors are ready and returns them (empty when the wait was
    /// interrupted: errno says why).
    public func wait() -> [Int32] {
        var events = [UInt8](repeating: 0, count: Self.eventSize * 16)
        let count = events.withUnsafeMutableBytes { Self.calls.wait(fd, $0.baseAddress, 16, -1) }
        guard count > 0 else { return [] }
        return events.withUnsafeBytes { bytes in
            (0..<Int(count)).map { index in
                Int32(truncatingIfNeeded: bytes.loadUnaligned(
                    fromByteOffset: index * Self.eventSize + Self.dataOffset, as: UInt64.self))
            }
        }
    }
}
