import Foundation
import StallFormat
import Testing

/// A file size limit (RLIMIT_FSIZE) reached by the capture file never kills the app: no SIGXFSZ, whole records.
@Suite struct FileSizeLimitTests {
    @Test func anAppUnderATinyFileSizeLimitSurvivesAStall() throws {
        let path = TestSupport.temporaryPath("fsize.stalls")
        defer { unlink(path) }
        let demo = TestSupport.productsDirectory.appendingPathComponent("stall-demo").path
        // dash counts `ulimit -f` in 512-byte blocks: 4 KiB, less than the image map of the demo.
        let result = try TestSupport.run(
            URL(fileURLWithPath: "/bin/sh"),
            ["-c", "ulimit -f 8 && exec \"$0\" \"$@\"", demo, "--stall", "busy", "--stall-ms", "600"],
            environment: [EnvironmentName.output: path, EnvironmentName.threshold: "150", EnvironmentName.interval: "5"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("write failed"))
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_size <= 4096)
        // What was written is whole records: it reads without a cut-record warning.
        let capture = try CaptureReader.read(path: path)
        #expect(capture.warnings.isEmpty)
        #expect(capture.process != nil)
    }
}
