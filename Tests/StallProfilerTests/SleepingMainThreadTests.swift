import Foundation
import StallAnalysis
import StallFormat
import Testing

/// A main thread that sleeps in a system call during a stall is sampled from its stack memory and never
/// signalled: its sleep takes exactly as long as it would without stallprof.
@Suite struct SleepingMainThreadTests {
    @Test(arguments: ["runloop", "dispatch"])
    func aSleepIsNeverCutShortAndIsSampledFromItsStart(loop: String) throws {
        let path = TestSupport.temporaryPath("sleeping-\(loop).stalls")
        defer { unlink(path) }
        let result = try TestSupport.run(
            TestSupport.productsDirectory.appendingPathComponent("stall-demo"),
            ["--stall", "sleep", "--stall-ms", "1500", "--loop", loop], environment: [EnvironmentName.output: path])
        // stall-demo exits 70 when its usleep failed with EINTR or returned before the time asked.
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("slept") && !result.stderr.contains("cut short"))
        let capture = try CaptureReader.read(path: path)
        let stall = try #require(capture.stalls.first)
        #expect(capture.stalls.count == 1 && stall.state == .blocked)
        // Sampled from within half a ping period of the first unanswered ping: well over 85 % of 1.5 s at 10 ms.
        #expect(stall.samples.count >= 128, "\(stall.samples.count) samples")
        #expect(stall.samples.allSatisfy { $0.flags.contains(.fromStackMemory) || $0.flags.contains(.repeated) })
        #expect(stall.samples.contains { $0.flags.contains(.fromStackMemory) })
        let names = Symbolizer(images: capture.images).rootFirstNames(leafFirst: stall.samples[0].frames)
        #expect(names.contains { $0.contains("SleepWork.sleep") }, "\(names)")
        #expect(names.last?.contains("nanosleep") == true, "\(names)")
        // Not under TSan: its libdispatch interceptor runs each main-queue block from a runtime frame without a
        // frame record (invoke_and_release_block), and the scan from stack memory cannot climb past it to _start.
        let underThreadSanitizer = dlsym(nil, "__tsan_init") != nil
        if loop == "runloop" && !underThreadSanitizer {
            #expect(names.first == "_start", "the same root as the handler's walk gives: \(names)")
        }
        #expect(stall.blockedOn?.waitKind == .sleep)
    }
}
