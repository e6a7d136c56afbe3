import Foundation
import Testing

/// `--event-filter` naming an event the input does not have: perf prints events with their modifiers
/// (`cpu-clock:pppH`), so `--event-filter cpu-clock` keeps nothing; the user is told which events there are.
@Suite struct EventFilterCLITests {
    static let perf = """
        gzip 31835 26046.213463:    1001001 cpu-clock:pppH: 
        \tffffffff821e86a7 clear_page_erms+0x7 ([kernel.kallsyms])
        \t    55f0c0a8ac4a main+0x1a (/usr/bin/gzip)


        """

    @Test func aFilterThatMatchesNoEventIsWarnedAbout() throws {
        let input = Array(Self.perf.utf8)
        let none = try CLI.run(["fold", "--event-filter", "cpu-clock", "-"], input: input)
        #expect(none.status == 0 && none.out.isEmpty)
        #expect(none.err.contains("no event 'cpu-clock'") && none.err.contains("'cpu-clock:pppH'"), "\(none.err)")
        let kept = try CLI.run(["fold", "--event-filter", "cpu-clock:pppH", "-"], input: input)
        #expect(kept.status == 0 && kept.out == "gzip;main;clear_page_erms 1001001\n" && kept.err.isEmpty)
    }
}
