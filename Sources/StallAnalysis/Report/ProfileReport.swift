/// A summary of a profile that is not a stallprof capture (perf script, macOS sample, folded stacks, speedscope
/// JSON), in the spirit of `perf report --stdio`: the total in the profile's unit, the top self (leaf) and total
/// (inclusive) functions with counts and shares, the heaviest stack and the recursion hint. ``text()`` and
/// ``json()`` render it.
///
/// Built with the capture report's ``ProfileBuilder``, one weighted sample per distinct stack. Such a profile has
/// no image map, so no frame can be told to be app code: every frame counts, the total shares are every
/// function's, and the only hints are recursion (a function twice on a stack; unresolved `[...]` frames never
/// count) and `[truncated]` stacks (folded stallprof captures).
public struct ProfileReport: Sendable {
    /// The schema name written as `schema` (docs/REPORT.md).
    public static let jsonSchema = "stallprof.profile-report/v1"

    /// The options used: ``StallReportOptions/topFunctions`` (the capture options do not apply).
    public let options: StallReportOptions
    /// The inputs, in the order given, with the format each was read as.
    public let inputs: [ProfileInput]
    /// What the counts measure (``CountUnit``); nil: unknown (folded text), read as samples.
    public let unit: CountUnit?
    /// Distinct stacks (an empty stack included).
    public let stacks: Int
    /// Where the weight was: ``SampleProfile/total`` is the profile's total; ``SampleProfile/topSelf`` the leaf
    /// functions; ``SampleProfile/appFrames`` every function's total (inclusive) share, counted once per stack
    /// however often it recurs, each at least 1 %; the heaviest stack and the hints.
    public let profile: SampleProfile
    /// The exact sums (``ExactSum``) of the total, of the listed functions' self and total counts, and of the
    /// heaviest stack: what the text and the JSON print, so integers beyond 2^53 are not rounded.
    let exact: ExactCounts

    /// See ``exact``.
    struct ExactCounts: Sendable {
        var total = ExactSum()
        var selfCounts: [String: ExactSum] = [:]
        var totalCounts: [String: ExactSum] = [:]
        var heaviest = ExactSum()
    }

    /// True when the total exceeds 2^64-1: it is printed rounded to a Double (the command warns).
    public var totalOverflows: Bool { exact.total.overflowed }

    /// Summarizes `folded`, read from `inputs`.
    public init(_ folded: FoldedStacks, inputs: [ProfileInput], options: StallReportOptions = StallReportOptions()) {
        self.options = options
        self.inputs = inputs
        unit = folded.unit
        stacks = folded.count
        // Each stack's frames as numbers, back to back (`starts[i]..<starts[i + 1]`), for the exact pass.
        var builder = ProfileBuilder()
        var names = FoldedFrameNames()
        var frames: [Int32] = []
        var starts = [0]
        var counts: [Double] = []
        // Distinct stacks have distinct frames unless two names are one to Swift (canonically equivalent Unicode,
        // or invalid UTF-8 repaired alike): then stacks are looked up and merged.
        var namesMerged = false
        folded.forEach { bytes, count in
            names.split(bytes.assumingMemoryBound(to: UInt8.self)) { name in
                let count = builder.nameCount
                let number = builder.number(of: name)
                if builder.nameCount == count { namesMerged = true }
                return number
            }
            frames += names.frames
            starts.append(frames.count)
            counts.append(count)
        }
        for (index, count) in counts.enumerated() {
            builder.add(frames: Array(frames[starts[index]..<starts[index + 1]]), app: nil, weight: count,
                        distinct: !namesMerged)
        }
        profile = builder.profile(kind: nil, state: nil, weightName: Self.weightName(folded.unit))
        exact = Self.exactCounts(folded, frames: frames, starts: starts, builder: builder, profile: profile,
                                 listed: max(options.topFunctions, 0))
    }

    /// The exact sums of what the report lists, in one more pass over the stacks (`frames[starts[i]..<starts[i + 1]]`:
    /// stack `i`'s frames, numbered by `builder`, in the stacks' first-seen order).
    static func exactCounts(_ folded: FoldedStacks, frames: [Int32], starts: [Int], builder: ProfileBuilder,
                            profile: SampleProfile, listed: Int) -> ExactCounts {
        var result = ExactCounts()
        // Per name number: its place among the listed self and total functions (-1: not listed), and the last
        // stack it was counted in.
        var selfSlot = [Int](repeating: -1, count: builder.nameCount)
        var totalSlot = selfSlot
        var counted = selfSlot
        let selfListed = profile.topSelf.prefix(listed).map(\.function)
        let totalListed = profile.appFrames.prefix(listed).map(\.function)
        for (slot, name) in selfListed.enumerated() { selfSlot[Int(builder.existingNumber(of: name)!)] = slot }
        for (slot, name) in totalListed.enumerated() { totalSlot[Int(builder.existingNumber(of: name)!)] = slot }
        var selfSums = [ExactSum](repeating: ExactSum(), count: selfListed.count)
        var totalSums = [ExactSum](repeating: ExactSum(), count: totalListed.count)
        let heaviest = profile.heaviestStack.map { builder.existingNumber(of: $0)! }
        var index = 0
        folded.forEachExact { _, whole, fraction in
            let stack = frames[starts[index]..<starts[index + 1]]
            index += 1
            result.total.add(whole: whole, fraction: fraction)
            guard let leaf = stack.last else { return }
            if selfSlot[Int(leaf)] >= 0 { selfSums[selfSlot[Int(leaf)]].add(whole: whole, fraction: fraction) }
            for frame in stack where totalSlot[Int(frame)] >= 0 && counted[Int(frame)] != index {
                counted[Int(frame)] = index
                totalSums[totalSlot[Int(frame)]].add(whole: whole, fraction: fraction)
            }
            if stack.elementsEqual(heaviest) { result.heaviest.add(whole: whole, fraction: fraction) }
        }
        for (slot, name) in selfListed.enumerated() { result.selfCounts[name] = selfSums[slot] }
        for (slot, name) in totalListed.enumerated() { result.totalCounts[name] = totalSums[slot] }
        return result
    }

    /// `value` as folded files write it, from its exact sum when there is one.
    static func countText(_ value: Double, _ exact: ExactSum?) -> String { exact?.text ?? CountFormat.plain(value) }

    /// What hints call the weight: `samples`, `the time`, or the unit's name (`cycles`).
    static func weightName(_ unit: CountUnit?) -> String {
        switch unit {
        case nil, .samples: return "samples"
        case .time: return "the time"
        case .named(let name): return name
        }
    }

    /// `count` in the profile's unit: a duration for time (`1.23 ms`), otherwise the number as folded files
    /// write it.
    func amount(_ count: Double, exact: ExactSum? = nil) -> String {
        unit?.duration(count) ?? Self.countText(count, exact)
    }

    /// The total with its unit: `42 samples`, `500 µs of time (500138 counts of 1 ns)`, `1200 cycles`.
    var totalText: String {
        let total = profile.total
        switch unit {
        case .time(let scale):
            return "\(amount(total)) of time (\(Self.countText(total, exact.total)) counts of \(CountFormat.plain(scale)) ns)"
        default: return quantity(total, exact: exact.total)
        }
    }

    /// `50.00%`: a share with two decimals as `perf report` prints it, clamped to [0, 1].
    static func percent(_ share: Double) -> String {
        let hundredths = Int((min(max(share.isFinite ? share : 0, 0), 1) * 10_000).rounded())
        let fraction = String(hundredths % 100)
        return "\(hundredths / 100)." + String(repeating: "0", count: 2 - fraction.count) + fraction + "%"
    }

    /// `count` with its unit: `6 samples`, `250 µs`, `1200 cycles`.
    func quantity(_ count: Double, exact: ExactSum? = nil) -> String {
        switch unit {
        case nil, .samples: return count == 1 ? "1 sample" : "\(Self.countText(count, exact)) samples"
        case .time: return amount(count)
        case .named(let name): return "\(Self.countText(count, exact)) \(name)"
        }
    }

    /// The functions listed: the first ``StallReportOptions/topFunctions`` leaf and total functions.
    var topSelf: ArraySlice<FunctionShare> { profile.topSelf.prefix(max(options.topFunctions, 0)) }
    /// See ``topSelf``.
    var topTotal: ArraySlice<FunctionShare> { profile.appFrames.prefix(max(options.topFunctions, 0)) }
}
