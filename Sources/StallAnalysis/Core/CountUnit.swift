/// What a profile's counts measure, so that flame graph tooltips say "samples" only for sample counts.
///
/// Importers set it on the ``FoldedStacks`` they fill: period-weighted `perf script` input counts its event's
/// periods (nanoseconds for `cpu-clock` and `task-clock`, else the event's own unit, e.g. `cycles`), speedscope
/// input counts in the file's `unit`. Captures, macOS `sample` reports and folded text leave it nil: sample counts
/// (or, for folded text, whatever the user says with `--countname`).
public enum CountUnit: Sendable, Equatable {
    /// One count per sample.
    case samples
    /// Time: each count is this many nanoseconds (1 for perf's `cpu-clock` periods, 1,000,000 for speedscope
    /// `milliseconds`).
    case time(nanosecondsPerCount: Double)
    /// Anything else, by the name tooltips give a count: `cycles`, `instructions`, `bytes`, `events`.
    case named(String)

    /// The unit of perf `event` periods (as `perf script` prints the event, modifiers such as `:u` or `:ppp` allowed).
    public static func perfPeriods(of event: String) -> CountUnit {
        let base = event.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
        switch base {
        case "cpu-clock", "task-clock": return .time(nanosecondsPerCount: 1)
        case "": return .named("events")
        default: return .named(base)
        }
    }

    /// The unit of a speedscope profile's `unit` field; nil for `none` (plain counts) or an unknown unit.
    public static func speedscope(_ unit: String) -> CountUnit? {
        switch unit {
        case "nanoseconds": return .time(nanosecondsPerCount: 1)
        case "microseconds": return .time(nanosecondsPerCount: 1_000)
        case "milliseconds": return .time(nanosecondsPerCount: 1_000_000)
        case "seconds": return .time(nanosecondsPerCount: 1_000_000_000)
        case "bytes": return .named("bytes")
        default: return nil
        }
    }

    /// The unit of counts from two sources added together: either one when the other is unknown (nil) or both
    /// agree, `counts` when they differ (the sum of samples and nanoseconds is no longer either).
    public static func combined(_ first: CountUnit?, _ second: CountUnit?) -> CountUnit? {
        guard let first else { return second }
        guard let second, second != first else { return first }
        return .named("counts")
    }

    /// What one count is called in a tooltip (`N samples`), or nil for time, which tooltips print as a duration.
    public var countName: String? {
        switch self {
        case .samples: return "samples"
        case .time: return nil
        case .named(let name): return name
        }
    }

    /// `count` of this unit as a duration with three significant digits (`950 ns`, `1.23 ms`, `12.3 s`); nil
    /// unless this is a time unit.
    public func duration(_ count: Double) -> String? {
        guard case .time(let scale) = self else { return nil }
        let ns = count * scale
        let (value, suffix): (Double, String) =
            abs(ns) < 1e3 ? (ns, "ns") : abs(ns) < 1e6 ? (ns / 1e3, "µs") : abs(ns) < 1e9 ? (ns / 1e6, "ms")
            : (ns / 1e9, "s")
        let digits = abs(value) < 9.995 ? 2 : abs(value) < 99.95 ? 1 : 0
        return fixed(value, suffix == "ns" ? 0 : digits) + " " + suffix
    }
}
