// Writes a few small capture files (version 2, every record type) as seeds for the capture fuzz target.
// Built by tools/fuzz.sh together with the StallFormat sources (one module, no fuzzer): `seeds DIRECTORY`.
import Glibc

@main
enum FuzzSeeds {
    static func main() throws {
        let directory = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "."
        let start: UInt64 = 1_000_000_000
        let header: [CaptureRecord] = [
            .process(ProcessRecord(pid: 42, startMonotonicNs: start, startWallNs: 1_796_072_400_000_000_000,
                                   thresholdNs: 250_000_000, sampleIntervalNs: 10_000_000, executable: "/bin/true")),
            .image(ImageRecord(path: "/bin/true", loadBias: 0x1000, start: 0x1000, end: 0x9000, buildID: [1, 2, 3])),
        ]
        func episode(_ id: UInt32, kind: EpisodeKind, state: StallState, samples: Int, flags: SampleFlags = [])
            -> [CaptureRecord]
        {
            let begin = start + UInt64(id) * 1_000_000_000
            var records: [CaptureRecord] = [.stallBegin(StallBeginRecord(
                stallID: id, startNs: begin, detectedNs: begin + 250_000_000, threadID: 42, kind: kind))]
            for index in 0..<samples {
                records.append(.sample(SampleRecord(
                    stallID: id, timestampNs: begin + 250_000_000 + UInt64(index) * 10_000_000,
                    threadCPUNs: UInt64(index) * 10_000_000, flags: flags, frames: [0x1100, 0x1200 + UInt64(index % 2), 0x1300])))
            }
            records.append(.stallEnd(StallEndRecord(
                stallID: id, endNs: begin + 500_000_000, cpuNs: 400_000_000, measuredNs: 500_000_000, state: state,
                sampleCount: UInt32(samples), missedCount: 1)))
            return records
        }
        let captures: [String: [CaptureRecord]] = [
            "busy": header + episode(1, kind: .stall, state: .busy, samples: 3) + [.close(timestampNs: start + 9_000_000_000)],
            "blocked": header + episode(2, kind: .stall, state: .blocked, samples: 2)
                + [.blockedOn(BlockedOnRecord(stallID: 2, timestampNs: start + 2_300_000_000, waitKind: .mutex,
                                              syscall: 202, argument: 0x7f00_1000, ownerTID: 43, ownerName: "holder",
                                              ownerState: UInt8(ascii: "S"), ownerSyscall: 35,
                                              ownerFlags: .fromStackMemory, ownerFrames: [0x1100, 0x1300]))],
            "saturated": header + episode(3, kind: .saturated, state: .busy, samples: 2, flags: .truncated)
                + Array(episode(4, kind: .stall, state: .busy, samples: 1).dropLast()),
            "markers": header + [
                .marker(MarkerRecord(kind: .instant, threadID: 42, timestampNs: start + 4_900_000_000, name: "touchDown")),
                .marker(MarkerRecord(kind: .begin, spanID: 1, threadID: 42, timestampNs: start + 5_100_000_000, name: "perform")),
            ] + episode(5, kind: .stall, state: .busy, samples: 2) + [
                .marker(MarkerRecord(kind: .end, spanID: 1, threadID: 42, timestampNs: start + 5_600_000_000, name: "")),
                .marker(MarkerRecord(kind: .begin, spanID: 2, threadID: 43, timestampNs: start + 5_700_000_000, name: "sync")),
                .marker(MarkerRecord(kind: .dropped, spanID: 3, threadID: 0, timestampNs: start + 5_800_000_000, name: "")),
                .marker(MarkerRecord(kind: .dropped, spanID: 9, threadID: 43, timestampNs: start + 5_800_000_000, name: "")),
            ],
            "signal-blocked": header + Array(episode(6, kind: .stall, state: .busy, samples: 0).dropLast())
                + [.signalMask(SignalMaskRecord(stallID: 6, timestampNs: start + 2_300_000_000, threadID: 42, signal: 27,
                                                blockedMask: 1 << 26))]
                + Array(episode(6, kind: .stall, state: .busy, samples: 0).suffix(1)),
        ]
        for (name, records) in captures {
            let writer = try CaptureWriter(path: "\(directory)/\(name).stalls")
            records.forEach(writer.append)
            try writer.close()
        }
    }
}
