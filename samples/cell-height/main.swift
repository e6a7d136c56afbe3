// cell-height: a list whose height never settles, a stand-in for the self-sizing cell oscillation of UI toolkits.
//
//   cell-height [--seconds N] [--cells N] [--animate P] [--loop runloop|dispatch] [--stall-at S]
//
// On RunLoop.main (or dispatchMain() with --loop dispatch, where a Dispatch worker drains the main queue), a
// hosting view lays out its cells; each pass that changes the height schedules the next one
// with DispatchQueue.main.async. Flags read through StallFlags (disable with STALLPROF_DISABLE=a,b):
// - self-sizing: cells size themselves against the view's height, which alternates forever (see HostingView):
//   the main queue keeps answering pings, but its thread never sleeps: a saturated main thread, not a stall;
// - height-cache: measurements are cached; passes get cheaper, but the loop goes on (an irrelevant flag).
// Without self-sizing the height settles in two passes and the app sits idle. After --seconds (default 3) the
// app stops the watchdog and exits 0. With STALLPROF_OUTPUT set, the watchdog records what it sees.
// --animate P (1-95) adds a healthy animation: a 10 ms frame timer whose handler works for P % of the frame, then
// the run loop sleeps until the next frame (for checking that a busy but healthy main thread is not saturated).
// --stall-at S adds one 600 ms layout pass (a stall) S seconds in, in the middle of the loop.
import Dispatch
import Foundation
import StallProfiler

var seconds = 3.0
var cellCount = 120
var animationPercent = 0.0
var stallAt: Double? = nil
var useDispatchMain = false
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let option = arguments.next() {
    if option == "--loop", let mode = arguments.next(), mode == "runloop" || mode == "dispatch" {
        useDispatchMain = mode == "dispatch"
        continue
    }
    guard let value = arguments.next().flatMap(Double.init), value > 0, value <= 86_400 else {
        FileHandle.standardError.write(Data(
            "usage: cell-height [--seconds N] [--cells N] [--animate P] [--loop runloop|dispatch] [--stall-at S]\n".utf8))
        exit(64)
    }
    switch option {
    case "--seconds": seconds = value
    case "--cells": cellCount = Int(value)
    case "--animate" where value <= 95: animationPercent = value
    case "--stall-at": stallAt = value
    default:
        FileHandle.standardError.write(Data("cell-height: unknown option \(option)\n".utf8))
        exit(64)
    }
}

let watchdog: StallWatchdog?
do { watchdog = try StallWatchdog.startFromEnvironment() } catch {
    FileHandle.standardError.write(Data("cell-height: \(error)\n".utf8))
    exit(1)
}

// Deterministic cell texts: 20 to 80 words of 26 to 58 points.
var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
@MainActor func next(_ range: Int) -> Int {
    seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
    return Int((seed >> 33) % UInt64(range))
}
let cells = (0..<max(1, cellCount)).map { _ in
    Cell(wordWidths: (0..<(20 + next(61))).map { _ in Double(26 + next(33)) })
}
let view = HostingView(
    cells: cells, measurer: CellMeasurer(caching: StallFlags.isEnabled("height-cache")),
    selfSizing: StallFlags.isEnabled("self-sizing"))
view.setNeedsLayout()
if let stallAt {
    DispatchQueue.main.asyncAfter(deadline: .now() + stallAt) {
        MainActor.assumeIsolated { view.slowPass(milliseconds: 600) }
    }
}
let animation = DispatchSource.makeTimerSource(queue: .main)
if animationPercent > 0 {
    let budget = Duration.microseconds(Int64(animationPercent * 100))
    animation.setEventHandler { MainActor.assumeIsolated { animateFrame(budget: budget) } }
    animation.schedule(deadline: .now(), repeating: .milliseconds(10), leeway: .microseconds(500))
    animation.activate()
}

/// One animation frame: works (measuring text) for `budget` of wall time, then returns to the run loop.
@MainActor @inline(never) func animateFrame(budget: Duration) {
    let clock = ContinuousClock()
    let deadline = clock.now + budget
    var lines = 0
    while clock.now < deadline { lines &+= CellMeasurer.lineCount(cells[lines % cells.count].wordWidths, width: 300) }
    if lines == -1 { print(lines) }
}

DispatchQueue.main.asyncAfter(deadline: .now() + seconds) {
    MainActor.assumeIsolated {
        watchdog?.stop()
        print("cell-height: \(view.passes) layout passes, \(view.settled ? "settled" : "never settled")")
        exit(0)
    }
}
if useDispatchMain { dispatchMain() } else { RunLoop.main.run() }
