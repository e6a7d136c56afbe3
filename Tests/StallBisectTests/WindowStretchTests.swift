import StallBisect
import StallFormat
import Testing

/// On a loaded machine the window counts only the time the app's main thread did not spend waiting for a CPU, up
/// to `windowStretch` windows of wall time (issue 17: a debug chat-freeze, slowed down 4-5x by eight CPU hogs,
/// froze after its 5 s window had ended "good").
@Suite struct WindowStretchTests {
    func options(_ measure: RunClassifierOptions.Measure) -> RunClassifierOptions {
        var options = RunClassifierOptions()
        options.windowSeconds = 5
        options.sustainedSeconds = 1
        options.measure = measure
        return options
    }

    @Test func waitForACPUDoesNotCountAgainstTheWindow() {
        let classifier = RunClassifier(options: options(.cpu))
        #expect(classifier.windowIsOver(seconds: 5, waitSeconds: 0))
        #expect(!classifier.windowIsOver(seconds: 5, waitSeconds: 3))
        #expect(!classifier.windowIsOver(seconds: 7.9, waitSeconds: 3))
        #expect(classifier.windowIsOver(seconds: 8, waitSeconds: 3))
        // At most ten windows of wall time, however long the wait.
        #expect(!classifier.windowIsOver(seconds: 49.9, waitSeconds: 49.9))
        #expect(classifier.windowIsOver(seconds: 50, waitSeconds: 50))
    }

    @Test func aWatchdogRunIsGoodOnlyOnceItsStretchedWindowIsOver() {
        var classifier = RunClassifier(options: options(.watchdog))
        let quiet = Capture(source: "run.stalls")
        // 5 s in, 3 s of them spent waiting for a CPU: the app has had 2 s of its window, not 5.
        #expect(classifier.record(seconds: 5, capture: quiet, waitSeconds: 3) == nil)
        #expect(classifier.record(seconds: 8.1, capture: quiet, waitSeconds: 3) == .good)
    }

    @Test func aCPURunIsJudgedOnceItsStretchedWindowIsOver() {
        var classifier = RunClassifier(options: options(.cpu))
        // Start-up work on a loaded machine for 3 s (20 % CPU, 80 % wait for a CPU, sleeping 100 times a second:
        // not frozen), then idle: 2.4 s of wait, so the 5 s window ends at 7.4 s, good.
        var verdict: RunVerdict? = nil
        var seconds = 0.0
        while verdict == nil && seconds < 30 {
            seconds += 0.1
            let busy = min(seconds, 3)
            verdict = classifier.record(
                seconds: seconds, cpuSeconds: busy * 0.2, waitSeconds: busy * 0.8,
                voluntarySwitches: Int(seconds * 100))
        }
        #expect(verdict == .good)
        #expect(seconds >= 7.4 - 1e-9)
    }

    @Test func aStretchBelowOneIsRefused() {
        var options = options(.cpu)
        options.windowStretch = 0.5
        #expect(throws: StallError.self) { try options.validate() }
    }
}
