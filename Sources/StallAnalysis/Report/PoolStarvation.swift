import StallFormat

/// A starvation of Swift's cooperative pool: the episodes of the `pool` target that overlap, one per pool thread
/// the watchdog found running work (docs/WATCHDOG.md, "The cooperative pool"): those found when it was declared
/// begin together, a worker that took work later joins it then. The report says it in one
/// sentence: `the cooperative pool was starved for 1.200 s: 2 of 2 threads blocked in DispatchSemaphore.wait under
/// Handler.fetch() at main.swift:46`.
public struct PoolStarvation: Sendable, Equatable {
    /// Index of its capture in ``StallReport/captures``.
    public var capture: Int
    /// Its episodes: indexes into ``StallReport/episodes``, one per pool thread.
    public var episodes: [Int]
    /// Start, milliseconds after the capture's start.
    public var startMs: Double
    /// How long the pool was starved: from its first episode's start to its last one's end, milliseconds.
    public var durationMs: Double
    /// Pool threads sampled: its episodes.
    public var threads: Int
    /// Those blocked, and those busy (an unfinished episode with one sample is neither).
    public var blocked: Int, busy: Int
    /// What the blocked threads waited in (`DispatchSemaphore.wait`, `a mutex`, `read`): the wait of the most
    /// common pair of wait and ``under`` among them; nil when none was blocked or nothing named it.
    public var wait: String?
    /// Where the app's code was in those threads: the leaf-most app function of their most samples, with its line
    /// when known; nil when none was blocked or no app code was on their stacks.
    public var under: String?
    /// How many blocked threads share that wait and place (``blocked`` when all do).
    public var blockedAlike = 0
    /// Where the most busy threads were, as ``under``; and how many were there.
    public var busyIn: String? = nil, busyAlike = 0

    /// The sentence.
    public var sentence: String {
        var text = "the cooperative pool was starved for \(ReportFormat.seconds(durationMs / 1000)): "
        let of = " of \(threads) thread\(threads == 1 ? "" : "s")"
        // "in X under Y" for all of them, or ", K in X under Y" for the K that share it.
        func alike(_ count: Int, _ total: Int, _ place: String) -> String {
            place.isEmpty ? "" : count == total ? place : ", \(count)\(place)"
        }
        let blockedPlace = (wait.map { " in \($0)" } ?? "") + (under.map { " under \($0)" } ?? "")
        let busyText = "busy" + alike(busyAlike, busy, busyIn.map { " in \($0)" } ?? "")
        if blocked > 0 {
            text += "\(blocked)\(of) blocked" + alike(blockedAlike, blocked, blockedPlace)
            if busy > 0 { text += "; \(busy) " + busyText }
        } else {
            text += busy > 0 ? "\(busy)\(of) " + busyText : "\(threads) thread\(threads == 1 ? "" : "s") sampled"
        }
        return text
    }

    /// The starvations among `episodes` (the report's, in capture and start order): the pool's stalls of one
    /// capture grouped while each begins before the ones so far have all ended (a starvation's first episodes
    /// share the start of the ping it did not run).
    static func find(in episodes: [EpisodeSummary]) -> [PoolStarvation] {
        var found: [PoolStarvation] = []
        for (index, e) in episodes.enumerated() where e.target == TargetNames.pool && e.kind == .stall {
            if let last = found.last, last.capture == e.capture, e.startMs < last.startMs + last.durationMs {
                found[found.count - 1].episodes.append(index)
                found[found.count - 1].durationMs = max(last.durationMs, e.startMs + e.durationMs - last.startMs)
            } else {
                found.append(PoolStarvation(
                    capture: e.capture, episodes: [index], startMs: e.startMs, durationMs: e.durationMs, threads: 0,
                    blocked: 0, busy: 0))
            }
        }
        return found.map { starvation in
            var s = starvation
            let members = s.episodes.map { episodes[$0] }
            s.threads = members.count
            let blocked = members.filter { $0.state == .blocked }, busy = members.filter { $0.state == .busy }
            (s.blocked, s.busy) = (blocked.count, busy.count)
            let places = blocked.map { (wait: waitName($0), under: appFrame($0)) }
            let keys = places.map { "\($0.wait ?? "")\u{0}\($0.under ?? "")" }
            if let best = mostCommon(keys), let at = keys.firstIndex(of: best) {
                (s.wait, s.under, s.blockedAlike) = (places[at].wait, places[at].under, keys.filter { $0 == best }.count)
            }
            let busyPlaces = busy.map { appFrame($0) ?? "" }
            if let best = mostCommon(busyPlaces) {
                (s.busyIn, s.busyAlike) = (best.isEmpty ? nil : best, busyPlaces.filter { $0 == best }.count)
            }
            return s
        }
    }

    /// The most frequent of `names` (ties: the first seen); nil when empty.
    static func mostCommon(_ names: [String]) -> String? {
        var counts: [String: Int] = [:]
        for name in names { counts[name, default: 0] += 1 }
        return names.max { counts[$0]! < counts[$1]! }.flatMap { best in names.first { counts[$0] == counts[best] } }
    }

    /// The leaf-most app function of most of `e`'s samples, with its line: `Handler.fetch() async at
    /// main.swift:46`.
    static func appFrame(_ e: EpisodeSummary) -> String? {
        guard let share = e.profile.appSelf.first else { return nil }
        return share.function + (share.place?.shortLocation.map { " at " + $0 } ?? "")
    }

    /// What `e`'s thread waited in, as the app calls it: the wait the report named (``BlockedOnSummary/kind``,
    /// else the one its heaviest stack shows), `DispatchSemaphore.wait` for libdispatch's semaphore, `a mutex`,
    /// the system call of an I/O wait or a sleep.
    static func waitName(_ e: EpisodeSummary) -> String? {
        let leafFirst = Array(e.profile.heaviestStack.reversed())
        guard let kind = e.blockedOn?.kind ?? WaitFrames.kind(leafFirst: leafFirst) else { return nil }
        switch kind {
        case "semaphore":
            let dispatch = leafFirst.contains { $0.contains("dispatch_semaphore") || $0.contains("DispatchSemaphore") }
            return dispatch ? "DispatchSemaphore.wait" : "sem_wait"
        case "group": return "DispatchGroup.wait"
        case "dispatch-sync": return "DispatchQueue.sync"
        case "condition": return "a condition wait"
        case "mutex": return "a mutex"
        case "join": return "pthread_join"
        case "rwlock": return "an rwlock"
        case "io", "sleep", "syscall": return e.blockedOn?.syscall ?? kind
        case "futex": return "a futex wait"
        default: return nil
        }
    }
}
