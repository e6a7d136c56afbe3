// stallprof-bench-snapshot: what one thread snapshot costs the watchdog thread, for a process of N threads.
// Driven by tools/bench-snapshot.sh. Starts N-1 threads that wait the ways an app's threads do (a third in
// nanosleep, a third on a semaphore, a third in read on a pipe), then takes SNAPSHOTS snapshots and prints the
// median and p90 in milliseconds. With `--hold`, it prints its pid and waits (for a debugger's comparison run).
//
//   stallprof-bench-snapshot THREADS [SNAPSHOTS] [--hold]
import Dispatch
import Foundation
@_spi(Benchmarks) import StallProfiler

let arguments = CommandLine.arguments
let threadCount = arguments.count > 1 ? max(1, Int(arguments[1]) ?? 10) : 10
let snapshots = arguments.count > 2 ? max(1, Int(arguments[2]) ?? 50) : 50
let hold = arguments.contains("--hold")

let gate = DispatchSemaphore(value: 0)
var pipeEnds: [Int32] = [0, 0]
guard pipe(&pipeEnds) == 0 else { fatalError("pipe") }
let readEnd = pipeEnds[0]
let started = DispatchSemaphore(value: 0)
for index in 0..<(threadCount - 1) {
    Thread {
        started.signal()
        switch index % 3 {
        case 0: usleep(600_000_000)
        case 1: gate.wait()
        default:
            var byte: UInt8 = 0
            _ = read(readEnd, &byte, 1)
        }
    }.start()
}
for _ in 0..<(threadCount - 1) { started.wait() }
usleep(200_000)  // all asleep in their calls

if hold {
    FileHandle.standardOutput.write(Data("\(getpid())\n".utf8))
    usleep(600_000_000)
}
let runs = ThreadSnapshotBenchmark.measure(count: snapshots)
let sorted = runs.map { Double($0.ns) / 1e6 }.sorted()
func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))] }
let listed = runs.last?.threads ?? 0
print(String(format: "snapshot of %d threads (%d listed): median %.3f ms, p90 %.3f ms over %d snapshots",
             threadCount, listed, percentile(0.5), percentile(0.9), runs.count))
exit(0)
