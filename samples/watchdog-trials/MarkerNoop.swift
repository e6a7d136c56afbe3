// watchdog-trials marker-noop: StallMarker's promise that with no watchdog running its calls are no-ops, checked
// from inside: the calling thread is put under a seccomp filter that kills the process on any system call but
// write and exit, then marks 100,000 times each way; heap allocations are counted when the test preloads
// tools/bench-markers/count-allocations.c (its stallprof_thread_allocations).
import Foundation
import StallProfiler

/// One BPF instruction of a seccomp filter (struct sock_filter), packed little-endian.
private func instruction(_ code: UInt16, _ jumpTrue: UInt8, _ jumpFalse: UInt8, _ k: UInt32) -> UInt64 {
    UInt64(code) | UInt64(jumpTrue) << 16 | UInt64(jumpFalse) << 24 | UInt64(k) << 32
}

#if arch(x86_64)
private let (sysWrite, sysExit, sysExitGroup): (UInt32, UInt32, UInt32) = (1, 60, 231)
#else
private let (sysWrite, sysExit, sysExitGroup): (UInt32, UInt32, UInt32) = (64, 93, 94)
#endif

/// Kills the whole process (SIGSYS) when this thread makes any system call other than write, exit, exit_group.
private func forbidSystemCalls() -> Bool {
    typealias Prctl = @convention(c) (Int32, UInt, UInt, UInt, UInt) -> Int32
    guard let symbol = dlsym(nil, "prctl") else { return false }
    let prctl = unsafeBitCast(symbol, to: Prctl.self)
    let filter: [UInt64] = [
        instruction(0x20, 0, 0, 0),  // load the system call number
        instruction(0x15, 3, 0, sysWrite),
        instruction(0x15, 2, 0, sysExit),
        instruction(0x15, 1, 0, sysExitGroup),
        instruction(0x06, 0, 0, 0x8000_0000),  // SECCOMP_RET_KILL_PROCESS
        instruction(0x06, 0, 0, 0x7fff_0000),  // SECCOMP_RET_ALLOW
    ]
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

/// Writes `text` (ASCII, built before the filter) and `number` in decimal to standard error, without allocating.
private func writeLine(_ text: StaticString, _ number: UInt, into buffer: inout [UInt8]) {
    var length = 0
    text.withUTF8Buffer { for byte in $0 { buffer[length] = byte; length += 1 } }
    var digits = 0, value = number
    repeat { digits += 1; value /= 10 } while value > 0
    value = number
    for index in stride(from: length + digits - 1, through: length, by: -1) {
        buffer[index] = UInt8(ascii: "0") + UInt8(value % 10)
        value /= 10
    }
    length += digits
    buffer[length] = UInt8(ascii: "\n")
    _ = buffer.withUnsafeBytes { write(2, $0.baseAddress, length + 1) }
}

func markerNoop() -> Never {
    typealias Counter = @convention(c) () -> UInt
    let countAllocations = dlsym(nil, "stallprof_thread_allocations").map { unsafeBitCast($0, to: Counter.self) }
    let name = String(repeating: "long-marker-name-", count: 8)  // a heap string, past the 63-byte bound
    // The first calls may set up StallMarker's globals: warm them (and the loop's code) before the filter.
    for _ in 0..<2 {
        StallMarker.mark("warm")
        StallMarker.mark(name)
        StallMarker.begin("warm").end()
        StallMarker.begin(name).end()
    }
    var buffer = [UInt8](repeating: 0, count: 128)
    guard forbidSystemCalls() else {
        FileHandle.standardError.write(Data("watchdog-trials: cannot install the seccomp filter\n".utf8))
        exit(3)
    }
    let before = countAllocations?() ?? 0
    let rounds = 100_000
    for _ in 0..<rounds {
        StallMarker.mark("touchDown")
        StallMarker.mark(name)
        StallMarker.begin("perform").end()
        StallMarker.begin(name).end()
    }
    let after = countAllocations?() ?? 0
    writeLine("marker-noop: calls without a system call ", UInt(rounds * 6), into: &buffer)
    if countAllocations != nil { writeLine("marker-noop: heap allocations ", after &- before, into: &buffer) }
    _exit(0)
}
