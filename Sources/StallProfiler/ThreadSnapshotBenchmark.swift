import CStallCapture

/// For `tools/bench-snapshot.sh` only (an SPI, not the app-facing API): what a thread snapshot costs the
/// watchdog thread.
@_spi(Benchmarks) public enum ThreadSnapshotBenchmark {
    /// Takes `count` snapshots of this process's threads from the calling thread, as the watchdog takes them
    /// during a blocked episode (names, states, waits, stacks; running threads signalled). Returns each one's
    /// duration in nanoseconds and the number of threads it listed.
    public static func measure(count: Int) -> [(ns: UInt64, threads: Int)] {
        let probe = BlockedOnProbe(configuration: .init(outputPath: "/dev/null"))
        return (0..<max(0, count)).map { _ in
            let start = stallcap_monotonic_ns()
            let record = probe.snapshot(stallID: 1, phase: .snapshot)
            return (stallcap_monotonic_ns() &- start, record.threads.count)
        }
    }
}
