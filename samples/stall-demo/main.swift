// stall-demo: an app whose main thread stalls once, watched by StallProfiler.
//
//   STALLPROF_OUTPUT=demo.stalls stall-demo --stall busy --loop runloop
//
// The main queue is serviced by `RunLoop.main.run()` (--loop runloop) or `dispatchMain()` (--loop dispatch).
// After a delay the main queue runs the stall (a 30-deep recursion spinning on the CPU, a wait for a lock a worker
// holds, a sleep, or a flood of tiny blocks another thread enqueues); shortly after it ends the watchdog is stopped
// and the app exits 0.
import Dispatch
import Foundation
import StallProfiler
import StallSamples

let options = DemoOptions.parse(Array(CommandLine.arguments.dropFirst()), program: "stall-demo")
let watchdog = options.startWatchdog()

DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(options.delayMilliseconds)) {
    options.stallNow {
        // Give the watchdog time to see the main queue answer again, then finish.
        DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(300)) {
            MainActor.assumeIsolated { watchdog?.stop() }
            exit(0)
        }
    }
}

if options.loop == "dispatch" {
    dispatchMain()
} else {
    RunLoop.main.run()
}
