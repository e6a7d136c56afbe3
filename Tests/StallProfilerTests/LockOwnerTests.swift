import Foundation
import StallAnalysis
import StallFormat
import StallSamples
import Testing

/// "Who holds the lock", end to end: stall-demo's main thread waits for a mutex that a thread named
/// `lock-holder` holds in `BlockedWork.holdLock`, sleeping in one long `usleep` or spinning.
@Suite struct LockOwnerTests {
    struct Run {
        var capture: Capture
        var records: [CaptureRecord]
        var stderr: String
    }

    func run(holder: LockHolderMode, milliseconds: Int = 800) throws -> Run {
        let path = TestSupport.temporaryPath("lock-owner-\(holder.rawValue).stalls")
        defer { unlink(path) }
        let result = try TestSupport.run(
            TestSupport.productsDirectory.appendingPathComponent("stall-demo"),
            ["--stall", "blocked", "--holder", holder.rawValue, "--stall-ms", String(milliseconds)],
            environment: [EnvironmentName.output: path, EnvironmentName.threshold: "150", EnvironmentName.interval: "5"])
        #expect(result.status == 0, "\(holder): \(result.stderr)")
        let records = try CaptureReader.records(CaptureReader.readWholeFile(path), source: path).records
        return Run(capture: try CaptureReader.read(path: path), records: records, stderr: result.stderr)
    }

    /// The holder's own report on stderr: `lock-holder sleeps: held 800 ms of 800 ms`.
    func heldAndAsked(in stderr: String) -> (held: Int, asked: Int)? {
        guard let line = stderr.split(separator: "\n").first(where: { $0.hasPrefix("lock-holder") }) else { return nil }
        let numbers = line.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        return numbers.count == 2 ? (numbers[0], numbers[1]) : nil
    }

    /// The blocked stall's record and its owner's stack, root first.
    func ownerStack(_ run: Run) throws -> (record: BlockedOnRecord, stall: Stall, names: [String]) {
        let stall = try #require(run.capture.stalls.first)
        let record = try #require(stall.blockedOn, "no blockedOn record")
        let names = Symbolizer(images: run.capture.images).rootFirstNames(leafFirst: record.ownerFrames)
        return (record, stall, names)
    }

    @Test func aSleepingOwnerIsNamedAndItsStackReadFromMemoryWithoutASignal() throws {
        let run = try run(holder: .sleeps)
        let (record, stall, names) = try ownerStack(run)
        #expect(stall.state == .blocked)
        #expect(record.waitKind == .mutex, "\(record)")
        #expect(record.ownerTID > 0 && record.ownerTID != stall.begin.threadID)
        #expect(record.ownerName == BlockedWork.holderThreadName)
        #expect(record.ownerState == UInt8(ascii: "S"))
        #expect(record.ownerSyscall >= 0)
        #expect(record.ownerFlags.contains(.fromStackMemory) && !record.ownerFlags.contains(.signalled))
        #expect(names.contains { $0.contains("BlockedWork.holdLock") }, "\(names)")
        #expect(names.contains { $0.contains("runHolder") }, "\(names)")
        // Scanned words are checked against the frame below: the stale code address in holdLock's locals is not
        // taken for a frame.
        #expect(!names.contains { $0.contains("swift_release") }, "\(names)")
        #expect(record.detail.contains("held by thread \(record.ownerTID) (lock-holder)"), "\(record.detail)")
        #expect(record.detail.contains("nanosleep"), "\(record.detail)")
        // The no-EINTR rule: the owner's usleep was not cut short (it measured at least the time it asked for).
        let measured = try #require(heldAndAsked(in: run.stderr), "\(run.stderr)")
        #expect(measured.held >= measured.asked, "\(run.stderr)")
        #expect(!run.stderr.contains("cut short"))
    }

    @Test func aSpinningOwnerIsSampledOnceWithTheSignal() throws {
        let run = try run(holder: .spins)
        let (record, stall, names) = try ownerStack(run)
        #expect(record.waitKind == .mutex, "\(record)")
        #expect(record.ownerTID > 0 && record.ownerTID != stall.begin.threadID)
        #expect(record.ownerName == BlockedWork.holderThreadName)
        #expect(record.ownerSyscall == -1)
        #expect(record.ownerFlags.contains(.signalled) && !record.ownerFlags.contains(.fromStackMemory))
        #expect(names.contains { $0.contains("BlockedWork.holdLock") }, "\(names)")
        #expect(record.detail.contains("running"), "\(record.detail)")
        // The waiting thread's own samples still show where it waits.
        let stacks = TestSupport.stacks(of: run.capture)
        #expect(!stacks.isEmpty && stacks.allSatisfy { $0.contains { $0.contains("BlockedWork.lockContended") } })
    }

    @Test func oneProbePerStall() throws {
        let run = try run(holder: .sleeps, milliseconds: 500)
        let probes = run.records.filter { if case .blockedOn = $0 { return true } else { return false } }
        #expect(run.capture.stalls.count == 1)
        #expect(probes.count == 1)
    }
}
