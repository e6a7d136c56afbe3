import Testing

/// A marker name is the app's string: in the text report a line break or a terminal escape in it must not break
/// the timeline's lines or reach the terminal.
@Suite struct MarkerNameTextTests {
    @Test func controlCharactersInMarkerNamesAreReplaced() throws {
        let report = try ReportMarkersTests().report([
            (.instant, 0, 2_100, "open\nfile", 4242), (.instant, 0, 2_200, "\u{1B}[2Jclear\u{7F}", 4242),
        ])
        let text = report.text()
        #expect(!text.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x7F })
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.contains { $0.hasSuffix("open?file") }, "\(text)")
        #expect(lines.contains { $0.hasSuffix("?[2Jclear?") })
        #expect(!lines.contains { $0.hasPrefix("file") })
    }
}
