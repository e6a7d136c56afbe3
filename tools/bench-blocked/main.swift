// stallprof-bench-blocked: what one blocked-on probe costs the watchdog thread. Driven by
// tools/bench-blocked.sh, which prints the figures. A thread waits on a mutex that a `lock-holder` thread holds
// while sleeping (StallSamples' BlockedWork); the probe's steps run PROBES times on that pair, as the watchdog
// runs them once per stall: read the waiter's /proc syscall file, find the mutex owner (process_vm_readv and a
// /proc/self/task check), read its name and state, and build its stack from its stack memory.
//
//   stallprof-bench-blocked [PROBES]
import CStallCapture
import Foundation
import StallSamples

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

let probes = CommandLine.arguments.count > 1 ? max(1, Int(CommandLine.arguments[1]) ?? 500) : 500
final class Waiter: @unchecked Sendable { var tid: pid_t = 0 }
let waiter = Waiter()
Thread {
    waiter.tid = stallcap_gettid()
    BlockedWork.waitForWorkerLock(milliseconds: 60_000)
}.start()

// Wait until the waiter sleeps on the mutex (it first waits on a semaphore, a futex without an owner).
var state = stallcap_syscall_state()
var owner: pid_t = 0
for _ in 0..<5000 where owner == 0 {
    usleep(1000)
    if waiter.tid != 0, stallcap_read_syscall(waiter.tid, &state) == STALLCAP_SYSCALL_IN_CALL {
        owner = stallcap_futex_mutex_owner(&state, waiter.tid)
    }
}
guard owner > 0 else {
    FileHandle.standardError.write("bench-blocked: the waiter never waited on the mutex\n".data(using: .utf8)!)
    exit(1)
}

var steps: [String: [Double]] = [:]
@MainActor func timed<T>(_ name: String, _ body: () -> T) -> T {
    let start = stallcap_monotonic_ns()
    let result = body()
    steps[name, default: []].append(Double(stallcap_monotonic_ns() - start) / 1000)
    return result
}
var frames = [UInt](repeating: 0, count: Int(STALLCAP_MAX_FRAMES))
var depth: UInt32 = 0
for _ in 0..<probes {
    timed("total") {
        var s = stallcap_syscall_state()
        _ = timed("waiter syscall file") { stallcap_read_syscall(waiter.tid, &s) }
        let found = timed("mutex owner") { stallcap_futex_mutex_owner(&s, waiter.tid) }
        precondition(found == owner, "the owner changed")
        var name = [CChar](repeating: 0, count: 64)
        _ = timed("owner comm and state") {
            _ = stallcap_thread_comm(found, &name, name.count)
            return stallcap_thread_state(found)
        }
        var o = stallcap_syscall_state()
        _ = stallcap_read_syscall(found, &o)
        depth = timed("owner stack from memory") {
            var flags: UInt32 = 0
            return frames.withUnsafeMutableBufferPointer {
                stallcap_stack_from_memory(o.pc, o.sp, 0, STALLCAP_MAX_SCAN_BYTES, $0.baseAddress, UInt32($0.count), &flags)
            }
        }
    }
}
print("\(probes) probes of a thread waiting on a mutex held by a sleeping thread; owner stack \(depth) frames")
print("step                        median us    p99 us")
for name in ["waiter syscall file", "mutex owner", "owner comm and state", "owner stack from memory", "total"] {
    let sorted = (steps[name] ?? []).sorted()
    print(name.padding(toLength: 26, withPad: " ", startingAt: 0)
        + String(format: "%10.1f %9.1f", percentile(sorted, 0.5), percentile(sorted, 0.99)))
}
exit(0)
