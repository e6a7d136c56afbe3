/// Perfetto keeps one stack of slices per thread and drops a complete slice that crosses an open one
/// (`slice_drop_overlapping_complete_event`): what a Chrome trace's complete events must respect.
public enum TraceNesting {
    /// A JSON number as a Double (JSONSerialization gives Int or Double).
    public static func number(_ value: Any?) -> Double? { (value as? Double) ?? (value as? Int).map(Double.init) }

    /// Microseconds as Perfetto reads them: nanoseconds, rounded (`llround(us * 1000)`).
    public static func nanoseconds(_ value: Any?) -> Double { ((number(value) ?? -1) * 1000).rounded() }

    /// The (start, end) of each complete event in nanoseconds as Perfetto reads them, in file order.
    public static func extents(_ events: [[String: Any]]) -> [(name: String, start: Double, end: Double)] {
        events.filter { $0["ph"] as? String == "X" }.map {
            let start = nanoseconds($0["ts"])
            return ($0["name"] as? String ?? "?", start, start + nanoseconds($0["dur"]))
        }
    }

    /// Where the complete events of one thread cross or leave Perfetto's order (by start, longer first); at most
    /// a few, empty when they nest.
    public static func problems(_ events: [[String: Any]]) -> [String] {
        let slices = extents(events)
        var problems: [String] = []
        for (i, a) in slices.enumerated() where problems.count < 5 {
            for b in slices[(i + 1)...] {
                if !(a.start < b.start || (a.start == b.start && a.end >= b.end)) { problems.append("\(a) before \(b)") }
                if !(b.start >= a.end || b.end <= a.end) { problems.append("\(a.name) and \(b.name) cross: Perfetto drops \(b.name)") }
            }
        }
        return problems
    }
}
