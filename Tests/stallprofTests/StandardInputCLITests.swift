import Foundation
import Testing

/// Without FILE, every reading command reads standard input when it is not a terminal (`perf script | stallprof
/// report`, as `perf script | stallprof fold`), and refuses a terminal with a usage error instead of waiting for it.
@Suite struct StandardInputCLITests {
    static let perf = "app 100/100 [000] 1.000000: 250000 cpu-clock:\n\t    1000 work (/bin/app)\n\t    2000 main (/bin/app)\n\n"

    @Test func reportReadsAPipeWithoutFile() throws {
        let result = try CLI.run(["report"], input: Array(Self.perf.utf8))
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("profile (perf script): <stdin>") && result.out.contains("work"))
    }

    @Test func noFileOnATerminalIsAUsageError() throws {
        for command in ["fold", "flamegraph", "report"] {
            let result = try CLI.run([command], terminal: true)
            #expect(result.status == 64 && result.out.isEmpty, "\(command): \(result.err)")
            #expect(result.err.contains("no input files") && result.err.split(separator: "\n").count == 2)
        }
    }
}
