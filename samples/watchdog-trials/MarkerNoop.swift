// watchdog-trials marker-noop: StallMarker's promise that with no watchdog running its calls are no-ops, checked
// from inside: the calling thread is put under a seccomp filter that kills the process on any system call but
// write and exit, then marks 100,000 times each way; heap allocations are counted when the test preloads
// tools/bench-markers/count-allocations.c (its stallprof_thread_allocations).
import Foundation
import StallProfiler

/// Kills the whole process (SIGSYS) when this thread makes any system call other than write, exit, exit_group.
private func forbidSystemCalls() -> Bool {
    confineThread(allowing: [SystemCall.write, SystemCall.exit, SystemCall.exitGroup])
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
