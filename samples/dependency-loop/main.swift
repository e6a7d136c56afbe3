// dependency-loop: a freeze that lives in a dependency. The app links ChatUI (samples/ChatUI, a tiny UI framework
// built as its own SwiftPM module) and shows a window; ChatUI's layout never settles and keeps the main thread
// busy for --stall-ms (default 1000) in one main-queue turn: a stall with no frame of the app's own module on the
// stack, only ChatUI's (and the system's). `stallprof report` says the loop is in ChatUI.
//
//   STALLPROF_OUTPUT=dep.stalls dependency-loop [--stall-ms N] [--delay-ms N]
//
// The window is shown --delay-ms after start (default 300, so that the watchdog has seen the main queue answer);
// about 300 ms after the layout gives up, the app stops the watchdog and exits 0.
import ChatUI
import Dispatch
import Foundation
import StallProfiler

var stallMs = 1000, delayMs = 300
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let option = arguments.next() {
    guard let value = arguments.next().flatMap(Int.init), (0...60_000).contains(value),
        option == "--stall-ms" || option == "--delay-ms"
    else {
        FileHandle.standardError.write(Data("usage: dependency-loop [--stall-ms N] [--delay-ms N]\n".utf8))
        exit(64)
    }
    if option == "--stall-ms" { stallMs = value } else { delayMs = value }
}

let watchdog: StallWatchdog?
do { watchdog = try StallWatchdog.startFromEnvironment() } catch {
    FileHandle.standardError.write(Data("dependency-loop: \(error)\n".utf8))
    exit(1)
}

let window = Window(title: "Chat", rowCount: 150)
DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(delayMs)) {
    MainActor.assumeIsolated {
        // The layout runs in a main-queue turn of its own, scheduled by ChatUI: no app frame but main on its stack.
        window.show(layoutMilliseconds: stallMs) {
            DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(300)) {
                MainActor.assumeIsolated {
                    watchdog?.stop()
                    print("dependency-loop: \(window.passes) layout passes")
                    exit(0)
                }
            }
        }
    }
}
dispatchMain()
