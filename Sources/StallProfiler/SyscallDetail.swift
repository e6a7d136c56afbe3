import CStallCapture

/// One thread's system call state, read from `/proc/self/task/<tid>/syscall` without touching the thread.
struct SyscallState {
    /// What the file said.
    enum Kind { case unknown, running, user, inCall }

    /// What the file said.
    var kind: Kind
    /// The system call number, -1 when not in one.
    var number: Int32
    /// Its six arguments (zeros when not in one). Built when asked for: the sampler reads a state per sample and
    /// needs only its kind and pointers.
    var arguments: [UInt64] { withUnsafeBytes(of: raw.args) { Array($0.bindMemory(to: UInt64.self)) } }
    /// User stack and instruction pointers (0 when running or unknown).
    var stackPointer: UInt64
    var programCounter: UInt64
    /// The C reading itself.
    var raw: stallcap_syscall_state

    /// Reads the state of thread `tid` of this process.
    init(thread tid: Int32) {
        var state = stallcap_syscall_state()
        _ = stallcap_read_syscall(tid, &state)
        self.init(state)
    }

    /// Converts the C reading.
    init(_ state: stallcap_syscall_state) {
        switch stallcap_syscall_kind(rawValue: UInt32(bitPattern: state.kind)) {
        case STALLCAP_SYSCALL_RUNNING: kind = .running
        case STALLCAP_SYSCALL_USER: kind = .user
        case STALLCAP_SYSCALL_IN_CALL: kind = .inCall
        default: kind = .unknown
        }
        number = state.nr
        stackPointer = state.sp
        programCounter = state.pc
        raw = state
    }

    /// Parses the text of a syscall file (for tests and tools).
    init(parsing text: String) {
        var state = stallcap_syscall_state()
        _ = stallcap_parse_syscall(text, &state)
        self.init(state)
    }
}

/// Names and readable details of the system calls a blocked thread typically waits in.
enum SyscallDetail {
    #if arch(x86_64)
    static let names: [Int32: String] = [
        0: "read", 1: "write", 7: "poll", 17: "pread64", 18: "pwrite64", 19: "readv", 20: "writev", 23: "select",
        34: "pause", 35: "nanosleep", 42: "connect", 43: "accept", 44: "sendto", 45: "recvfrom", 46: "sendmsg",
        47: "recvmsg", 61: "wait4", 72: "fcntl", 73: "flock", 128: "rt_sigtimedwait", 130: "rt_sigsuspend",
        202: "futex", 230: "clock_nanosleep", 232: "epoll_wait", 247: "waitid", 270: "pselect6", 271: "ppoll",
        281: "epoll_pwait", 288: "accept4", 441: "epoll_pwait2",
    ]
    #else
    static let names: [Int32: String] = [
        22: "epoll_pwait", 25: "fcntl", 32: "flock", 63: "read", 64: "write", 65: "readv", 66: "writev",
        67: "pread64", 68: "pwrite64", 72: "pselect6", 73: "ppoll", 95: "waitid", 98: "futex", 101: "nanosleep",
        115: "clock_nanosleep", 133: "rt_sigsuspend", 137: "rt_sigtimedwait", 202: "accept", 203: "connect",
        206: "sendto", 207: "recvfrom", 211: "sendmsg", 212: "recvmsg", 242: "accept4", 260: "wait4",
        441: "epoll_pwait2",
    ]
    #endif

    private static let fdCalls: Set<String> = [
        "read", "write", "readv", "writev", "pread64", "pwrite64", "accept", "accept4", "connect", "recvfrom",
        "recvmsg", "sendto", "sendmsg", "fcntl", "flock",
    ]

    /// The name of system call `number`, or `syscall N`.
    static func name(_ number: Int32) -> String { names[number] ?? "syscall \(number)" }

    /// The target of descriptor `fd` (`pipe:[1234]`, a path), or nil.
    static func fdTarget(_ fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        let length = buffer.withUnsafeMutableBufferPointer { stallcap_fd_target(fd, $0.baseAddress, $0.count) }
        guard length >= 0 else { return nil }
        return String(decoding: buffer[0..<Int(length)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `fd 5 (pipe:[1234])`; a Unix socket with its other end, `fd 7 (socket:[99], peer socket:[100])` (the
    /// kernel's sock_diag says which: the analyzer finds the thread on that end).
    static func describeFD(_ fd: Int32) -> String {
        guard let target = fdTarget(fd) else { return "fd \(fd)" }
        guard target.hasPrefix("socket:["), let inode = UInt32(target.dropFirst(8).dropLast()),
            case let peer = stallcap_unix_socket_peer(fd, inode), peer != 0
        else { return "fd \(fd) (\(target))" }
        return "fd \(fd) (\(target), peer socket:[\(peer)])"
    }

    /// A readable line for a thread in system call `state` (for example `read fd 5 (pipe:[1234])` or
    /// `clock_nanosleep 0.600 s`). Memory the arguments point to is read with process_vm_readv only.
    static func describe(_ state: SyscallState) -> String {
        guard state.kind == .inCall else { return state.kind == .unknown ? "" : "running" }
        let name = name(state.number), args = state.arguments
        let fd = Int32(truncatingIfNeeded: args[0])
        switch name {
        case _ where fdCalls.contains(name):
            return "\(name) \(describeFD(fd))"
        case "epoll_wait", "epoll_pwait", "epoll_pwait2":
            let timeout = Int32(truncatingIfNeeded: args[3])
            let wait = name == "epoll_pwait2" ? "" : (timeout < 0 ? ", no timeout" : ", timeout \(timeout) ms")
            return "\(name) \(describeFD(fd))\(wait)"
        case "poll", "ppoll":
            return "\(name) \(pollTargets(address: args[0], count: args[1]))"
        case "select", "pselect6":
            return "\(name) nfds \(fd)"
        case "nanosleep":
            return "\(name) \(timespec(at: args[0]))"
        case "clock_nanosleep":
            let until = args[1] & 1 != 0 ? "until " : ""
            return "\(name) \(until)\(timespec(at: args[2]))"
        case "futex":
            return "futex op \(args[1] & 0x7f) on 0x\(String(args[0], radix: 16)), value \(UInt32(truncatingIfNeeded: args[2]))"
        default:
            return name
        }
    }

    /// `2 fds: 5 (pipe:[1]), 7 (socket:[2])`, at most four listed.
    private static func pollTargets(address: UInt64, count: UInt64) -> String {
        let shown = Int(min(count, 4))
        var words = [UInt64](repeating: 0, count: max(shown, 1))  // struct pollfd: int fd, short events, revents
        let read = shown > 0 && words.withUnsafeMutableBytes {
            stallcap_read_memory(address, $0.baseAddress, shown * 8) == 0
        }
        let header = "\(count) fd\(count == 1 ? "" : "s")"
        guard read else { return header }
        let fds = words.prefix(shown).map { describeFD(Int32(truncatingIfNeeded: $0 & 0xffff_ffff)).dropFirst(3) }
        return header + ": " + fds.joined(separator: ", ") + (count > 4 ? ", ..." : "")
    }

    /// `0.600 s`, or `?` when the timespec cannot be read.
    private static func timespec(at address: UInt64) -> String {
        var pair: (Int64, Int64) = (0, 0)
        guard address != 0, withUnsafeMutableBytes(of: &pair, { stallcap_read_memory(address, $0.baseAddress, 16) }) == 0
        else { return "?" }
        let millis = max(0, pair.0 &* 1000 &+ pair.1 / 1_000_000)
        let fraction = String(millis % 1000)
        return "\(millis / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction) s"
    }
}
