import Foundation
import Testing
@testable import StallAnalysis

/// Hostile speedscope input found in review: weights that add up past the largest Double (folded and exported as
/// `inf`, then as `null` in speedscope and a garbled pprof value; now any weight or stack sum of 2^64 or more), frame names with the folded separator `;`, and
/// profiles of one file in different units.
@Suite struct SpeedscopeHostileTests {
    static func document(frames: String = #"[{"name":"a"},{"name":"b"}]"#, profiles: String) -> String {
        SpeedscopeImportTests.document(frames: frames, profiles: profiles)
    }

    @Test func weightsAddingUpToInfinityAreBadDataNotInf() throws {
        // A weight of 2^64 or more is no count (FoldedCount), the first of two 1e308 already.
        let sampled = Self.document(profiles: #"{"type":"sampled","name":"p","unit":"none","startValue":0,"endValue":1,"samples":[[0],[0]],"weights":[1e308,1e308]}"#)
        let bad = try #require(FoldFixture.badData { try SpeedscopeImportTests.fold(sampled) })
        #expect(bad.position == "profiles[0].samples[0]" && bad.reason.contains("2^64"))
        // Two weights below 2^64 whose sum for one stack is not: the second.
        let summed = Self.document(profiles: #"{"type":"sampled","name":"p","unit":"none","startValue":0,"endValue":1,"samples":[[0],[1],[0]],"weights":[1e19,5,1e19]}"#)
        let badSum = try #require(FoldFixture.badData { try SpeedscopeImportTests.fold(summed) })
        #expect(badSum.position == "profiles[0].samples[2]" && badSum.reason.contains("2^64"))
        let evented = Self.document(profiles: #"{"type":"evented","name":"e","unit":"milliseconds","startValue":0,"endValue":1,"events":[{"type":"O","frame":0,"at":-1e308},{"type":"C","frame":0,"at":1e308}]}"#)
        let badEvented = try #require(FoldFixture.badData { try SpeedscopeImportTests.fold(evented) })
        #expect(badEvented.position == "profiles[0].events" && badEvented.reason.contains("finite"))
    }

    @Test func aSemicolonInAFrameNameStaysInOneFrame() throws {
        let text = try SpeedscopeImportTests.fold(Self.document(
            frames: #"[{"name":"ünï\u0301cødé 🔥;x"},{"name":"tab\tline\nend"}]"#,
            profiles: #"{"type":"sampled","name":"p","unit":"none","startValue":0,"endValue":1,"samples":[[0,1]],"weights":[2]}"#))
        #expect(text == "ünï\u{301}cødé 🔥:x;tab\tline end 2\n")
    }

    @Test func profilesInDifferentUnitsAreMergedWithAWarning() throws {
        let text = Self.document(profiles: #"{"type":"sampled","name":"cpu","unit":"milliseconds","startValue":0,"endValue":1,"samples":[[0]],"weights":[5]},{"type":"sampled","name":"heap","unit":"bytes","startValue":0,"endValue":1,"samples":[[1]],"weights":[1000]}"#)
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("stallprof-units-\(UUID().uuidString).json")
        try Data(text.utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let (stacks, diagnostics) = try Folder.fold([InputSource(path: url.path)], options: FoldOptions())
        #expect(stacks.rendered() == "a 5\nb 1000\n")
        #expect(diagnostics.warnings.contains { $0.contains("milliseconds") && $0.contains("bytes") })
    }
}
