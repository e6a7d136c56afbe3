import Foundation
@testable import StallAnalysis
import StallFormat

/// Folding the fixtures in Tests/StallAnalysisTests/Fixtures (written for these tests, no peer data).
enum FoldFixture {
    /// The path of a fixture file.
    static func path(_ name: String) -> String {
        Bundle.module.url(forResource: "Fixtures", withExtension: nil)!.appendingPathComponent(name).path
    }

    /// Folds `names` with `options`; returns the folded text and the warnings.
    static func fold(_ names: [String], _ options: FoldOptions = FoldOptions()) throws -> (text: String, warnings: [String]) {
        let (stacks, diagnostics) = try Folder.fold(names.map { InputSource(path: path($0)) }, options: options)
        return (stacks.rendered(), diagnostics.warnings)
    }

    /// Folds one fixture and returns the text only.
    static func text(_ name: String, _ configure: (inout FoldOptions) -> Void = { _ in }) throws -> String {
        var options = FoldOptions()
        configure(&options)
        return try fold([name], options).text
    }

    /// Writes `bytes` to a temporary file and folds it.
    static func foldBytes(_ bytes: [UInt8], _ configure: (inout FoldOptions) -> Void = { _ in }) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("stallprof-fold-\(UUID().uuidString)")
        try Data(bytes).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        var options = FoldOptions()
        configure(&options)
        let (stacks, _) = try Folder.fold([InputSource(path: url.path)], options: options)
        return stacks.rendered()
    }

    /// The bad-data error's position and reason, or nil when `body` does not throw one.
    static func badData(_ body: () throws -> Any) -> (position: String, reason: String)? {
        do {
            _ = try body()
        } catch StallError.badData(_, let position, let reason) {
            return (position, reason)
        } catch {}
        return nil
    }
}
