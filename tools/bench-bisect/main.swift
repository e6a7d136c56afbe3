// stallprof-bench-bisect: run counts of `BisectSearch` on simulated repros (tools/bench-bisect.sh runs it).
//
//   stallprof-bench-bisect [--seeds N] [--calibration N] [--flaky-calibration N] [--flaky-measure N] [--miss P]
//
// The options override BisectSearchOptions' defaults, to compare settings.
//
// Deterministic repros: mean and worst runs over every placement of the culprits (sampled for large n) for
// n = 8, 12, 16, 32, 64 flags with one culprit, an AND pair and an OR pair. Flaky repro: 12 flags, an AND
// pair (placed by the seed), freeze rate 70 % and 50 %, over N seeds: how often the answer is right, and the distribution of runs;
// then an OR pair, an AND of three and an AND of four (up to 300 seeds). BENCH_TRACE=SEED prints one search's runs.
// With BENCH_DEBUG set, one line per flaky seed that ends wrong or over 90 runs.
#if canImport(Glibc)
import Glibc
#endif
import StallBisect

var seeds = 1000
var options = BisectSearchOptions()
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    let value = arguments.next().flatMap(Double.init) ?? -1
    switch argument {
    case "--seeds" where value >= 1: seeds = Int(value)
    case "--calibration" where value >= 1: options.deterministicCalibrationRuns = Int(value)
    case "--flaky-calibration" where value >= 1: options.flakyCalibrationRuns = Int(value)
    case "--flaky-measure" where value >= 1: options.flakyMeasureRuns = Int(value)
    case "--miss" where value > 0 && value < 1: options.missProbability = value
    default:
        print("usage: stallprof-bench-bisect [--seeds N] [--calibration N] [--flaky-calibration N] [--flaky-measure N] [--miss P]")
        exit(64)
    }
}

@MainActor func runs(
    _ causes: [Set<String>], flags: [String], freezeRate: Double = 1, seed: UInt64 = 1, crash: Set<String> = []
) -> (BisectOutcome, Int) {
    let repro = SimulatedRepro(causes: causes, freezeRate: freezeRate, crashWhenDisabled: crash, seed: seed)
    let outcome = try! BisectSearch(flags: flags, options: options, run: repro.predicate()).search()
    return (outcome, repro.runs)
}

func placements(_ n: Int, size: Int, limit: Int = 400) -> [[Int]] {
    var all: [[Int]] = []
    if size == 1 { all = (0..<n).map { [$0] } } else {
        for a in 0..<n { for b in (a + 1)..<n { all.append([a, b]) } }
    }
    guard all.count > limit else { return all }
    let stride = Double(all.count) / Double(limit)
    return (0..<limit).map { all[Int(Double($0) * stride)] }
}

func pad(_ text: String, _ width: Int) -> String { String(repeating: " ", count: max(0, width - text.count)) + text }

print("Deterministic repro: runs (calibration and verification included), mean / worst over culprit placements")
print("   n   1 culprit      AND pair       OR pair")
for n in [8, 12, 16, 32, 64] {
    let flags = (0..<n).map { "f\($0)" }
    var cells: [String] = []
    for kind in ["one", "and", "or"] {
        var total = 0
        var worst = 0
        var wrong = 0
        let sets = placements(n, size: kind == "one" ? 1 : 2)
        for placement in sets {
            let names = placement.map { "f\($0)" }
            let causes: [Set<String>] = kind == "or" ? names.map { [$0] } : [Set(names)]
            let (outcome, count) = runs(causes, flags: flags)
            if Set(outcome.causes.map(Set.init)) != Set(causes) { wrong += 1 }
            total += count
            worst = max(worst, count)
        }
        let mean = Double(total) / Double(sets.count)
        cells.append(pad("\((mean * 10).rounded() / 10) / \(worst)", 12) + (wrong > 0 ? " (\(wrong) wrong)" : ""))
    }
    print(pad("\(n)", 4) + "  " + cells.joined(separator: "  "))
}

// Issue 3's other deterministic budgets, 12 flags: a flag whose disabling crashes the freezing app (with one
// culprit or an AND pair elsewhere), and calibration that fails.
do {
    let flags = (0..<12).map { "f\($0)" }
    var worstCrash = 0
    var wrongCrash = 0
    for crasher in flags {
        for placement in placements(12, size: 1) + placements(12, size: 2) {
            let cause = Set(placement.map { "f\($0)" })
            guard !cause.contains(crasher) else { continue }
            let (outcome, count) = runs([cause], flags: flags, crash: [crasher])
            if outcome.causes.map(Set.init) != [cause] || outcome.fixes.contains(crasher) { wrongCrash += 1 }
            worstCrash = max(worstCrash, count)
        }
    }
    let (_, notReproducible) = runs([], flags: flags)
    let (_, notAttributable) = runs([[]], flags: flags)
    print("\n12 flags, deterministic: a crashing flag (every culprit and AND-pair placement): worst \(worstCrash) runs"
        + (wrongCrash > 0 ? " (\(wrongCrash) wrong)" : "") + "; not-reproducible \(notReproducible) runs; "
        + "not-attributable \(notAttributable) runs")
}

for rate in [0.7, 0.5] {
    let flags = (0..<12).map { "f\($0)" }
    var right = 0
    var within90 = 0
    var verdicts: [String: Int] = [:]
    var counts: [Int] = []
    for seed in 1...seeds {
        // The pair's placement varies with the seed.
        let first = seed % 12
        let pair: Set<String> = ["f\(first)", "f\((first + 1 + (seed / 12) % 11) % 12)"]
        let (outcome, count) = runs([pair], flags: flags, freezeRate: rate, seed: UInt64(seed))
        let correct = outcome.verdict == .found && Set(outcome.causes.map(Set.init)) == [pair]
        if correct { right += 1 }
        if (!correct || count > 90) && getenv("BENCH_DEBUG") != nil {
            print("seed \(seed): \(outcome.verdict) \(outcome.causes) runs \(count) repeats \(outcome.repeats) calib rate \(outcome.freezeRate ?? -1) \(outcome.message ?? "") phases "
                + Dictionary(grouping: outcome.trials, by: { "\($0.phase)" }).map { "\($0.key) \($0.value.count)" }.sorted().joined(separator: ", "))
        }
        if let trace = getenv("BENCH_TRACE"), Int(String(cString: trace)) == seed {
            print("seed \(seed), pair \(pair.sorted()), freeze rate \(rate):")
            for trial in outcome.trials { print("  \(trial.phase) disabled \(trial.disabled): \(trial.verdict)") }
        }
        if correct && count <= 90 { within90 += 1 }
        verdicts[correct ? "right" : "\(outcome.verdict.rawValue)\(outcome.verdict == .found ? " (wrong)" : "")", default: 0] += 1
        counts.append(count)
    }
    counts.sort()
    let percent = { (n: Int) in "\((Double(n) * 1000 / Double(seeds)).rounded() / 10) %" }
    print("\nFlaky repro, 12 flags, AND pair, freeze rate \(Int(rate * 100)) %, \(seeds) seeds:")
    print("  right answer: \(percent(right)); right within 90 runs: \(percent(within90))")
    print("  runs: median \(counts[counts.count / 2]), 90th percentile \(counts[counts.count * 9 / 10]), "
        + "99th \(counts[counts.count * 99 / 100]), worst \(counts.last!)")
    print("  outcomes: " + verdicts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
}

// Other shapes of flaky causes, 12 flags, placed by the seed: an OR pair, an AND of three (the largest cause
// the flaky search's hypotheses cover) and an AND of four (found by halving instead).
print("\nOther flaky shapes, 12 flags, \(min(seeds, 300)) seeds: right answer, median / 90th percentile runs")
for (name, size, or, rate) in [("OR pair", 2, true, 0.5), ("AND of three", 3, false, 0.7), ("AND of four", 4, false, 0.8)] {
    let flags = (0..<12).map { "f\($0)" }
    var right = 0
    var counts: [Int] = []
    for seed in 1...min(seeds, 300) {
        var generator = SplitMix64(state: UInt64(seed) &* 0x9E37_79B9_7F4A_7C15)
        let members = Array(flags.shuffled(using: &generator).prefix(size))
        let causes: [Set<String>] = or ? members.map { [$0] } : [Set(members)]
        let (outcome, count) = runs(causes, flags: flags, freezeRate: rate, seed: UInt64(seed))
        if getenv("BENCH_DEBUG") != nil { print("  \(name) seed \(seed) \(causes) -> \(outcome.verdict) \(outcome.causes) \(count)") }
        if outcome.verdict == .found && Set(outcome.causes.map(Set.init)) == Set(causes) { right += 1 }
        counts.append(count)
    }
    counts.sort()
    print("  \(name), freeze rate \(Int(rate * 100)) %: \((Double(right) * 1000 / Double(counts.count)).rounded() / 10) %, "
        + "\(counts[counts.count / 2]) / \(counts[counts.count * 9 / 10]) runs")
}
