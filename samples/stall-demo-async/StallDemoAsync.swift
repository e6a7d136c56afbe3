// stall-demo-async: the same stall under an async `@main`, where the main actor's queue is serviced by a
// worker thread rather than the process's first thread.
//
//   STALLPROF_OUTPUT=demo.stalls stall-demo-async --stall blocked
import StallProfiler
import StallSamples

@main
struct StallDemoAsync {
    static func main() async throws {
        let options = DemoOptions.parse(Array(CommandLine.arguments.dropFirst()), program: "stall-demo-async")
        let watchdog = options.startWatchdog()
        try await Task.sleep(for: .milliseconds(options.delayMilliseconds))
        await MainActor.run { options.stallNow() }
        try await Task.sleep(for: .milliseconds(300))
        watchdog?.stop()
    }
}
