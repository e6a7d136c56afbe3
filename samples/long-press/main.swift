// long-press: the order of events, not CPU. A long-press callback that the code assumed ran at finger-up runs
// while the finger is still down, and stalls the main thread; the app's markers put the touches and the callback
// on the stall timeline.
//
//   STALLPROF_OUTPUT=press.stalls long-press [--press-ms N] [--hold-ms N] [--work-ms N]
//
// On RunLoop.main, a simulated touch source (standing in for the window server) delivers a touch-down, and
// --hold-ms later (default 500) a touch-up, as events on the main queue. The gesture recognizer arms a long-press
// timer at touch-down; it fires --press-ms after it (default 350), while the finger is still down, and the
// callback does --work-ms of work (default 500, on the CPU): a stall. The touch-up, due while the callback runs,
// is handled after it. Marked with StallMarker: `touchDown` and `touchUp` (instants, when each is handled) and
// `longPress` (an interval: the callback). About half a second later the app stops the watchdog and exits 0.
import Dispatch
import Foundation
import StallProfiler

var pressMs = 350, holdMs = 500, workMs = 500
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let option = arguments.next() {
    guard let value = arguments.next().flatMap(Int.init), (1...60_000).contains(value),
        ["--press-ms", "--hold-ms", "--work-ms"].contains(option)
    else {
        FileHandle.standardError.write(Data("usage: long-press [--press-ms N] [--hold-ms N] [--work-ms N]\n".utf8))
        exit(64)
    }
    switch option {
    case "--press-ms": pressMs = value
    case "--hold-ms": holdMs = value
    default: workMs = value
    }
}

let watchdog: StallWatchdog?
do { watchdog = try StallWatchdog.startFromEnvironment() } catch {
    FileHandle.standardError.write(Data("long-press: \(error)\n".utf8))
    exit(1)
}

/// The recognizer: arms a timer at touch-down; when it fires before touch-up, runs the long-press action.
@MainActor final class LongPressRecognizer {
    let minimumDuration: TimeInterval
    let action: @MainActor () -> Void
    private var timer: Timer?
    private(set) var fingerDown = false
    private(set) var firedWhileDown = false

    init(minimumDuration: TimeInterval, action: @escaping @MainActor () -> Void) {
        self.minimumDuration = minimumDuration
        self.action = action
    }

    func touchDown() {
        StallMarker.mark("touchDown")
        fingerDown = true
        timer = Timer.scheduledTimer(withTimeInterval: minimumDuration, repeats: false) { _ in
            MainActor.assumeIsolated { self.fire() }
        }
    }

    func touchUp() {
        StallMarker.mark("touchUp")
        fingerDown = false
        timer?.invalidate()
    }

    private func fire() {
        firedWhileDown = fingerDown
        let span = StallMarker.begin("longPress")
        action()
        span.end()
    }
}

/// The callback: written for finger-up, it commits the selection, and that work takes `workMs` on the CPU.
@inline(never) func commitSelection(milliseconds: Int) -> UInt64 {
    let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(milliseconds) * 1_000_000
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    while DispatchTime.now().uptimeNanoseconds < deadline {
        for _ in 0..<1000 { state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
    }
    return state
}

let recognizer = LongPressRecognizer(minimumDuration: Double(pressMs) / 1000) {
    if commitSelection(milliseconds: workMs) == 0 { print("unreachable") }
}

// The touch source: events arrive on the main queue at the times the finger moves.
let touchDownAt = DispatchTime.now() + .milliseconds(300)
DispatchQueue.main.asyncAfter(deadline: touchDownAt) { MainActor.assumeIsolated { recognizer.touchDown() } }
DispatchQueue.main.asyncAfter(deadline: touchDownAt + .milliseconds(holdMs)) {
    MainActor.assumeIsolated {
        recognizer.touchUp()
        let fired = recognizer.firedWhileDown ? "while the finger was down" : "after touch-up"
        print("long-press: the callback ran \(fired)")
        DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(500)) {
            watchdog?.stop()
            exit(0)
        }
    }
}
RunLoop.main.run()
