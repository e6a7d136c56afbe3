#if canImport(Glibc)
import Glibc
#endif

/// Progress of a bisection on standard error: one line per run, rewritten in place on a terminal, plain lines
/// otherwise (logs, CI).
public struct BisectProgress {
    /// Rewrite one live line (true on a terminal) or print one line per run.
    public let live: Bool
    private var count = 0
    private var finished = false

    /// Creates a reporter; `live` defaults to whether standard error is a terminal.
    public init(live: Bool = isatty(2) == 1) { self.live = live }

    /// Reports one finished run.
    public mutating func report(_ trial: BisectTrial) {
        count += 1
        write(Self.line(trial, number: count))
    }

    /// Ends the live line, before anything else is printed. Calling it again does nothing.
    public mutating func finish() {
        if live && count > 0 && !finished { emit("\n") }
        finished = true
    }

    /// The text of one run's line: `run 7 [search] disabled {a,b}: frozen (CPU 0.99, 1.2 s, frozen)`.
    public static func line(_ trial: BisectTrial, number: Int) -> String {
        let disabled = trial.disabled.isEmpty ? "nothing" : "{\(trial.disabled.joined(separator: ","))}"
        let details = [trial.mainThreadCPU.map { "CPU \($0)" }, trial.seconds.map { "\($0) s" }, trial.detail]
            .compactMap { $0 }.joined(separator: ", ")
        return "run \(number) [\(trial.phase.rawValue)] disabled \(disabled): \(trial.verdict.rawValue)"
            + (details.isEmpty ? "" : " (\(details))")
    }

    private func write(_ line: String) { emit(live ? "\r\u{1B}[K" + line : line + "\n") }

    private func emit(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
    }
}
