// flag-repro: a tiny app for end-to-end tests of `stallprof bisect`. It reads every flag of --flags through
// StallFlags, then spins on its main thread forever when every flag of some --freeze-when group is enabled;
// otherwise it works for --run-ms and exits 0.
//
//   flag-repro --flags a,b,c,d --freeze-when a+b,c [--crash-when-disabled d] [--run-ms 200] [--ignore c]
//              [--work-percent P]
//
// --crash-when-disabled F: when a group is enabled but F is disabled, abort (SIGABRT) instead of freezing.
// --ignore F: never consult flag F (to test the report of unconsulted flags).
// --work-percent P: for --run-ms, the healthy path works like a 10 ms timer whose callback needs P % of 10 ms of
// CPU: each period it spins until it has used that much CPU time, then sleeps until the next period starts (the
// next one still ahead, like a run loop waiting for its timer). On a loaded machine the work takes longer than
// the period, CPU plus run-queue wait reaches a whole core, but it still sleeps every period: slow but healthy.
// Default 0: it only sleeps.
#if canImport(Glibc)
import Glibc
#endif
import StallProfiler

func fail(_ message: String) -> Never {
    let line = Array("flag-repro: \(message)\n".utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(64)
}

var flags: [String] = []
var groups: [[String]] = []
var crashWhenDisabled: String? = nil
var ignored: Set<String> = []
var runMilliseconds = 200
var workPercent = 0
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let option = arguments.next() {
    guard let value = arguments.next() else { fail("\(option) needs a value") }
    switch option {
    case "--flags": flags = value.split(separator: ",").map(String.init)
    case "--freeze-when": groups = value.split(separator: ",").map { $0.split(separator: "+").map(String.init) }
    case "--crash-when-disabled": crashWhenDisabled = value
    case "--ignore": ignored.insert(value)
    case "--run-ms": runMilliseconds = Int(value) ?? 200
    case "--work-percent": workPercent = min(100, max(0, Int(value) ?? 0))
    default: fail("unknown option \(option)")
    }
}

var enabled: Set<String> = []
for flag in flags where !ignored.contains(flag) && StallFlags.isEnabled(flag) { enabled.insert(flag) }
if groups.contains(where: { $0.allSatisfy(enabled.contains) }) {
    if let crashWhenDisabled, !enabled.contains(crashWhenDisabled) { abort() }
    var spins: UInt64 = 0
    while true { spins &+= 1 }  // the freeze: the main thread burns CPU forever
}
func now(_ clock: clockid_t = CLOCK_MONOTONIC) -> Double {
    var time = timespec()
    clock_gettime(clock, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

if workPercent > 0 {
    let start = now()
    var next = start
    while now() - start < Double(runMilliseconds) / 1000 {
        let used = now(CLOCK_THREAD_CPUTIME_ID)
        while now(CLOCK_THREAD_CPUTIME_ID) - used < Double(workPercent) / 10_000 {}  // P % of 10 ms of CPU
        let late = now()
        while next <= late { next += 0.01 }
        usleep(UInt32((next - late) * 1e6) + 1)
    }
} else {
    usleep(UInt32(runMilliseconds) * 1000)
}
exit(0)
