// Shared helpers of stallprof-bench-capture: percentiles, clocks and per-thread CPU over a window.
import CStallCapture
import Foundation

/// The value at fraction `p` (0...1) of an ascending array; 0 for an empty one.
func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

/// Median of unsorted values.
func median(_ values: [Double]) -> Double { percentile(values.sorted(), 0.5) }

/// CPU time of the calling thread, nanoseconds.
func ownThreadCPUNs() -> UInt64 { UInt64(max(0, stallcap_thread_cpu_ns(stallcap_gettid()))) }

/// CPU seconds of this whole process so far (user + system, all threads).
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// CPU nanoseconds each thread of this process has run so far (from /proc/self/task/*/schedstat), keyed by
/// "name[tid]". Subtract two snapshots to get a window's figures: the counters run from thread start.
func threadCPUSnapshot() -> [String: UInt64] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    var result: [String: UInt64] = [:]
    for tid in tasks {
        guard let comm = try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8),
            let sched = try? String(contentsOfFile: "/proc/self/task/\(tid)/schedstat", encoding: .utf8),
            let ns = sched.split(separator: " ").first.flatMap({ UInt64($0) })
        else { continue }
        result["\(comm.trimmingCharacters(in: .whitespacesAndNewlines))[\(tid)]"] = ns
    }
    return result
}

/// Per-thread CPU over a window: `end - start` for threads present at both ends, a thread born inside the window
/// counted from 0.
func threadCPUDelta(from start: [String: UInt64], to end: [String: UInt64]) -> [(String, UInt64)] {
    end.map { name, ns in (name, ns &- min(ns, start[name] ?? 0)) }.sorted { $0.0 < $1.0 }
}

/// The one-minute load average, as /proc/loadavg prints it ("?" when unreadable).
func loadAverage() -> String {
    let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)
    return text?.split(separator: " ").first.map(String.init) ?? "?"
}

/// "  label  value" with the label padded to a column.
func line(_ label: String, _ value: String) {
    print("  " + label.padding(toLength: 46, withPad: " ", startingAt: 0) + " " + value)
}

/// Pins the calling thread to CPU `cpu` (no-op when the machine has fewer CPUs). Returns true when pinned.
@discardableResult
func pinToCPU(_ cpu: Int) -> Bool {
    guard cpu < sysconf(Int32(_SC_NPROCESSORS_ONLN)) else { return false }
    var set = cpu_set_t()
    withUnsafeMutableBytes(of: &set) { $0[cpu / 8] = UInt8(1 << (cpu % 8)) }
    // sched_setaffinity is a GNU extension the Glibc module does not export: look it up.
    typealias SetAffinity = @convention(c) (pid_t, Int, UnsafeRawPointer) -> Int32
    guard let symbol = dlsym(nil, "sched_setaffinity") else { return false }
    let setAffinity = unsafeBitCast(symbol, to: SetAffinity.self)
    return withUnsafeBytes(of: &set) { setAffinity(0, MemoryLayout<cpu_set_t>.size, $0.baseAddress!) } == 0
}
