import StallFormat

/// Names of the Linux system calls a blocked thread commonly waits in, for x86_64 and aarch64 (the numbers
/// /proc/<pid>/task/<tid>/syscall reports). Other numbers read `syscall N`.
public enum SyscallNames {
    /// A machine whose numbering the table knows.
    public enum Architecture: Sendable {
        /// x86_64 (`arch/x86/entry/syscalls/syscall_64.tbl`).
        case x86_64
        /// aarch64 (the generic `asm-generic/unistd.h` table).
        case aarch64
    }

    static let x86_64: [Int: String] = [
        0: "read", 1: "write", 7: "poll", 16: "ioctl", 17: "pread64", 18: "pwrite64", 19: "readv", 20: "writev",
        23: "select", 24: "sched_yield", 34: "pause", 35: "nanosleep", 42: "connect", 43: "accept", 44: "sendto",
        45: "recvfrom", 46: "sendmsg", 47: "recvmsg", 61: "wait4", 73: "flock", 74: "fsync", 75: "fdatasync",
        128: "rt_sigtimedwait", 130: "rt_sigsuspend", 202: "futex", 208: "io_getevents", 230: "clock_nanosleep",
        232: "epoll_wait", 247: "waitid", 257: "openat", 270: "pselect6", 271: "ppoll", 281: "epoll_pwait",
        288: "accept4", 299: "recvmmsg", 307: "sendmmsg", 441: "epoll_pwait2", 449: "futex_waitv",
    ]

    static let aarch64: [Int: String] = [
        4: "io_getevents", 22: "epoll_pwait", 29: "ioctl", 32: "flock", 56: "openat", 63: "read", 64: "write",
        65: "readv", 66: "writev", 67: "pread64", 68: "pwrite64", 72: "pselect6", 73: "ppoll", 82: "fsync",
        83: "fdatasync", 95: "waitid", 98: "futex", 101: "nanosleep", 115: "clock_nanosleep", 124: "sched_yield",
        133: "rt_sigsuspend", 137: "rt_sigtimedwait", 202: "accept", 203: "connect", 206: "sendto",
        207: "recvfrom", 211: "sendmsg", 212: "recvmsg", 242: "accept4", 243: "recvmmsg", 260: "wait4",
        269: "sendmmsg", 441: "epoll_pwait2", 449: "futex_waitv",
    ]

    /// The name of system call `number` on `architecture`; `syscall N` when the table does not know it.
    public static func name(_ number: Int, architecture: Architecture) -> String {
        let table = architecture == .x86_64 ? x86_64 : aarch64
        return table[number] ?? "syscall \(number)"
    }

    /// The futex call's number on `architecture`.
    public static func futexNumber(_ architecture: Architecture) -> Int { architecture == .x86_64 ? 202 : 98 }

    /// The captured machine's architecture, from the ELF header of the executable at `path` (`e_machine` 62 is
    /// x86_64, 183 aarch64); this machine's when the file cannot be read.
    public static func architecture(ofExecutable path: String?) -> Architecture {
        architecture(machine: machine(ofExecutable: path))
    }

    /// The captured machine's architecture: the one `stallprof symbolicate` recorded, else the executable's.
    public static func architecture(of capture: Capture) -> Architecture {
        let recorded = capture.symbolication?.machine ?? 0
        return architecture(machine: recorded != 0 ? recorded : machine(ofExecutable: capture.process?.executable))
    }

    /// The ELF `e_machine` of the executable at `path`; 0 when the file cannot be read or is no ELF file.
    static func machine(ofExecutable path: String?) -> UInt16 {
        guard let path else { return 0 }
        return ELFHeader.machine(readPrefix(path, count: 20)) ?? 0
    }

    /// The architecture of ELF machine `machine`; this machine's for 0 and any other.
    static func architecture(machine: UInt16) -> Architecture {
        if machine == 62 { return .x86_64 }
        if machine == 183 { return .aarch64 }
        #if arch(arm64)
        return .aarch64
        #else
        return .x86_64
        #endif
    }

    private static func readPrefix(_ path: String, count: Int) -> [UInt8] {
        // A path from a capture: read only a regular file, never a FIFO or a device.
        guard let bytes = try? FileReader(path: path, regularOnly: true).bytes(at: 0, count: count),
            bytes.count == count
        else { return [] }
        return bytes
    }
}
