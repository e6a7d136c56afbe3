import StallFormat

/// How the stacks of an episode that were read from memory (a thread asleep in a system call is never signalled)
/// came out: walked to the outermost frame with unwind information, or stopped early, counted by reason
/// (docs/REPORT.md, `memoryStacks`). Where the walk stopped, the frames beyond were found by scanning
/// (``scanned``) or dropped: a stack is never completed by guessing without the mark.
public struct MemoryStackCounts: Sendable, Equatable {
    /// Samples whose stack was read from memory.
    public var samples = 0
    /// Of those, the ones with frames found by scanning stack words or following frame records (marked).
    public var scanned = 0
    /// Walks that stopped at a function without unwind information.
    public var noUnwindInfo = 0
    /// Walks that stopped where the frame pointer was needed and not known.
    public var framePointer = 0
    /// Walks that stopped at unusable rules or an unreadable or implausible stack word.
    public var unusable = 0

    /// Walks that stopped before the outermost frame.
    public var stopped: Int { noUnwindInfo + framePointer + unusable }

    /// Counts the memory-read samples (with frames) of `samples`; nil when there are none.
    init?(_ samples: [Sample]) {
        for sample in samples where sample.flags.contains(.fromStackMemory) && !sample.frames.isEmpty {
            self.samples += 1
            let flags = sample.flags
            if flags.contains(.scannedFrames) { scanned += 1 }
            if flags.contains(.walkStoppedNoUnwindInfo) { noUnwindInfo += 1 }
            if flags.contains(.walkStoppedFramePointer) { framePointer += 1 }
            if flags.contains(.walkStoppedUnusable) { unusable += 1 }
        }
        if self.samples == 0 { return nil }
    }

    /// The counts of several episodes together (a group's); nil when none has any.
    init?(summing parts: [MemoryStackCounts]) {
        guard !parts.isEmpty else { return nil }
        for part in parts {
            samples += part.samples
            scanned += part.scanned
            noUnwindInfo += part.noUnwindInfo
            framePointer += part.framePointer
            unusable += part.unusable
        }
    }

    /// The text report's line, only when some walk stopped or some frame was scanned: `stacks read from memory: 93;
    /// 5 stopped before the outermost frame (3 no unwind information, 2 frame pointer not known); 5 with scanned
    /// frames`.
    public var line: String? {
        guard stopped > 0 || scanned > 0 else { return nil }
        let reasons = [(noUnwindInfo, "no unwind information"), (framePointer, "frame pointer not known"),
                       (unusable, "unusable rule or stack word")]
            .filter { $0.0 > 0 }.map { "\($0.0) \($0.1)" }.joined(separator: ", ")
        var text = "stacks read from memory: \(samples)"
        if stopped > 0 { text += "; \(stopped) stopped before the outermost frame (\(reasons))" }
        return text + "; \(scanned) with frames found by scanning (each checked against the call before it)"
    }
}
