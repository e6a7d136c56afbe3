import StallFormat
import Testing

@testable import StallAnalysis

/// A capture drawn as a flame chart keeps its samples' time order.
@Suite struct TimeOrderTests {
    /// Two stalls on a made-up image at unresolvable addresses: names are `[app]` plus the address image.
    func capture() -> Capture {
        let app = ImageRecord(path: "/nonexistent/app", loadBias: 0x1000, start: 0x1000, end: 0x2000, buildID: [])
        let lib = ImageRecord(path: "/nonexistent/lib.so", loadBias: 0x3000, start: 0x3000, end: 0x4000, buildID: [])
        func sample(_ t: UInt64, _ frames: [UInt64]) -> Sample {
            Sample(timestampNs: t, threadCPUNs: t, flags: [], frames: frames)
        }
        let first = Stall(begin: StallBeginRecord(stallID: 1, startNs: 0, detectedNs: 1, threadID: 1),
                          samples: [sample(1, [0x1100]), sample(2, [0x1100]), sample(3, [0x3100, 0x1100])])
        let second = Stall(begin: StallBeginRecord(stallID: 2, startNs: 10, detectedNs: 11, threadID: 1),
                           samples: [sample(11, [0x1100])])
        return Capture(source: "t.stalls", images: [app, lib], stalls: [first, second])
    }

    @Test func samplesComeNewestFirstWithRunsMerged() {
        var diagnostics = Diagnostics()
        let entries = StallCaptureImporter().timeOrdered(capture(), diagnostics: &diagnostics)
        #expect(entries == [
            WeightedStack(stack: "[app]", count: 1),
            WeightedStack(stack: "[app];[lib.so]", count: 1),
            WeightedStack(stack: "[app]", count: 2),
        ])
        var onlySecond = StallCaptureImporter.Options()
        onlySecond.selection.stallIDs = [2]
        #expect(StallCaptureImporter(options: onlySecond).timeOrdered(capture(), diagnostics: &diagnostics).count == 1)
    }
}
