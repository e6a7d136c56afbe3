// Prints the slowdown benchmark's figures: per rate, the slowdown per CPU second of the sampled thread with its 95 %
// confidence interval and median, whether the interval settles the 0.1 % goal, and the same for the blocks in
// which the sampler ran on the thread's CPU and for those in which it ran on another one.
import Foundation

/// One set of blocks' contrasts: CPU time, wall-clock time and (with a counter) user instructions.
private struct Contrasts {
    var cpu = PairedContrasts(), wall = PairedContrasts(), instructions = PairedContrasts()
    var samples = 0, onCPUNs = 0.0

    init(_ blocks: [Block], timestamps: [UInt64], instructions counted: Bool) {
        for block in blocks {
            let n = block.on.samples(in: timestamps)
            cpu.add(off: block.off.cpuNs, on: block.on.cpuNs, rate: Double(n) / (block.on.cpuNs / 1e9))
            wall.add(off: block.off.wallNs, on: block.on.wallNs)
            if counted { instructions.add(off: block.off.instructions, on: block.on.instructions) }
            samples += n
            onCPUNs += block.on.cpuNs
        }
    }

    /// The CPU figure held against the goal: at 100 Hz scaled to exactly 100 samples a second of CPU, at 1 kHz
    /// as achieved. The signal waits for a scheduler tick that finds the thread running, so asked for at 1 kHz a
    /// thread gets at most the kernel's HZ samples a second (250 here), fewer when it shares its CPU.
    /// (Without samples, as in the control, there is nothing to scale by: the plain mean.)
    func figure(_ hz: Int) -> Interval { hz == 100 && samples > 0 ? cpu.scaled(to: 100) : cpu.interval }
}

/// Prints each rate's figures for `measured` blocks.
func reportSlowdown(_ measured: [Block], sampler: SwitchedSampler, instructions counted: Bool) {
    let timestamps = sampler.timestamps
    for hz in [100, 1000] {
        let stalled = measured.filter { $0.hz == hz && $0.hostStall }
        let blocks = measured.filter { $0.hz == hz && !$0.hostStall }
        let all = Contrasts(blocks, timestamps: timestamps, instructions: counted)
        let figure = all.figure(hz)
        line(hz == 100 ? "slowdown at 100 samples/s, per CPU second" : "slowdown asked at 1 kHz, per CPU second",
             figure.summary)
        line("", figure.verdict(goal: 0.1))
        let rate: Double = all.onCPUNs > 0 ? Double(all.samples) / (all.onCPUNs / 1e9) : 0
        line("", String(format: "%d samples in the on windows, %.0f a second of CPU; blocks' sd %.2f %%, batch "
            + "means vary %.1fx as independent blocks would", all.samples, rate, all.cpu.blockStandardDeviation,
            all.cpu.inflation))
        if hz == 100 { line("  as measured (asked 100 Hz)", all.cpu.interval.summary) }
        // By where the sampler ran in the on windows: the spells last seconds, and the cost differs most between
        // them (Slowdown.swift). A kind needs two blocks per batch for its own interval.
        let placements = blocks.map { $0.placement(sampler.places) }
        for (kind, label) in [(Placement.apart, "sampler on another CPU"), (.shared, "sampler on the thread's CPU")] {
            let subset = zip(blocks, placements).filter { $0.1 == kind }.map(\.0)
            let share = String(format: "  %@ (%.0f %%)", label, 100 * Double(subset.count) / Double(max(1, blocks.count)))
            guard subset.count >= 2 * PairedContrasts.batches else {
                line(share, "\(subset.count) blocks: too few for an interval")
                continue
            }
            let kindFigure = Contrasts(subset, timestamps: timestamps, instructions: false).figure(hz)
            line(share, kindFigure.summary)
            line("", kindFigure.verdict(goal: 0.1))
        }
        let mixed = placements.filter { $0 == .mixed }.count
        if mixed > 0 { line("  mixed, moved or not seen", "\(mixed) of \(blocks.count) blocks, in the figure above only") }
        if !stalled.isEmpty {
            let on = stalled.filter(\.slowWindowIsOn).count
            line("  set aside: a window > 10 % slower", "\(stalled.count) blocks (the slow window on: \(on), off: "
                + "\(stalled.count - on))")
        }
        // Per wall-clock second the thread also loses what other processes and the sampler take from its CPU: on a
        // shared machine mostly preemption by other builds, heavy-tailed, so this interval is wide and says little.
        line("  per wall-clock second", all.wall.interval.summary)
        if counted { line("  user instructions per unit of work", all.instructions.interval.summary) }
    }
    let stray = measured.reduce(0) { $0 + $1.off.samples(in: timestamps) }
    if sampler.missed > 0 { line("sample requests not answered in time", "\(sampler.missed)") }
    if stray > 0 { line("samples in off windows (should be none)", "\(stray)") }
}
