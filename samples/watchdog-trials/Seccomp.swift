// A seccomp filter on one thread, for the trials that check which system calls code makes on that thread.
import Foundation

/// System call numbers of this architecture.
enum SystemCall {
    #if arch(x86_64)
    static let write: UInt32 = 1, exit: UInt32 = 60, exitGroup: UInt32 = 231
    static let rtSigreturn: UInt32 = 15, clockGettime: UInt32 = 228
    /// AUDIT_ARCH_X86_64: seccomp_data.arch of a native system call.
    static let auditArch: UInt32 = 0xc000_003e
    #else
    static let write: UInt32 = 64, exit: UInt32 = 93, exitGroup: UInt32 = 94
    static let rtSigreturn: UInt32 = 139, clockGettime: UInt32 = 113
    static let auditArch: UInt32 = 0xc000_00b7  // AUDIT_ARCH_AARCH64
    #endif
}

/// One BPF instruction of a seccomp filter (struct sock_filter), packed little-endian.
private func instruction(_ code: UInt16, _ jumpTrue: UInt8, _ jumpFalse: UInt8, _ k: UInt32) -> UInt64 {
    UInt64(code) | UInt64(jumpTrue) << 16 | UInt64(jumpFalse) << 24 | UInt64(k) << 32
}

/// Kills the whole process (SIGSYS) when the calling thread makes any system call but `allowed` (or one of another
/// architecture's numbering). Other threads, existing or started by others, are not confined (no TSYNC); threads
/// this one starts would be. Returns false when the filter could not be installed.
func confineThread(allowing allowed: [UInt32]) -> Bool {
    typealias Prctl = @convention(c) (Int32, UInt, UInt, UInt, UInt) -> Int32
    guard let symbol = dlsym(nil, "prctl"), allowed.count < 200 else { return false }
    let prctl = unsafeBitCast(symbol, to: Prctl.self)
    let n = UInt8(allowed.count)
    var filter: [UInt64] = [
        instruction(0x20, 0, 0, 4),  // load seccomp_data.arch
        instruction(0x15, 0, n + 1, SystemCall.auditArch),  // another architecture: kill
        instruction(0x20, 0, 0, 0),  // load the system call number
    ]
    for (index, number) in allowed.enumerated() { filter.append(instruction(0x15, n - UInt8(index), 0, number)) }
    filter.append(instruction(0x06, 0, 0, 0x8000_0000))  // SECCOMP_RET_KILL_PROCESS
    filter.append(instruction(0x06, 0, 0, 0x7fff_0000))  // SECCOMP_RET_ALLOW
    struct Program {  // struct sock_fprog
        var count: UInt16
        var filter: UnsafeRawPointer
    }
    return filter.withUnsafeBytes { bytes in
        var program = Program(count: UInt16(filter.count), filter: bytes.baseAddress!)
        return withUnsafePointer(to: &program) { pointer in
            prctl(38, 1, 0, 0, 0) == 0  // PR_SET_NO_NEW_PRIVS
                && prctl(22, 2, UInt(bitPattern: pointer), 0, 0) == 0  // PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        }
    }
}
