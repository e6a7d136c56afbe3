import Foundation
import StallFormat
import Testing

/// The golden-file harness: an output is compared with `Fixtures/golden/<name>.expected` in the source tree.
/// `STALLPROF_BLESS=1 swift test` rewrites the expected files. A mismatch fails the test with a unified diff
/// (expected to actual) and writes the output next to the expected file as `<name>.actual` (gitignored), so
/// `diff` or a merge tool can show it whole and `mv` can accept it; a later match removes the stale `.actual`.
enum Golden {
    /// `Tests/StallAnalysisTests/Fixtures/golden` in the source tree (not the copied test resources: blessing
    /// must change the files in the repository).
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/golden")

    /// True when `STALLPROF_BLESS=1`.
    static var blessing: Bool { ProcessInfo.processInfo.environment[EnvironmentName.bless] == "1" }

    /// Lines of context around each change in the diff.
    static let context = 3

    /// Compares `actual` with `<name>.expected` (`name` may contain subdirectories) in `directory` (default:
    /// ``directory``), or rewrites it when blessing.
    static func check(_ actual: String, _ name: String, in directory: URL = Golden.directory,
                      sourceLocation: SourceLocation = #_sourceLocation) {
        let expectedURL = directory.appendingPathComponent(name + ".expected")
        let actualURL = directory.appendingPathComponent(name + ".actual")
        do {
            try FileManager.default.createDirectory(
                at: expectedURL.deletingLastPathComponent(), withIntermediateDirectories: true)
            if blessing {
                try actual.write(to: expectedURL, atomically: true, encoding: .utf8)
            }
            guard let expected = try? String(contentsOf: expectedURL, encoding: .utf8) else {
                try actual.write(to: actualURL, atomically: true, encoding: .utf8)
                let message = "no golden file \(name).expected; the output is in \(name).actual "
                    + "(\(EnvironmentName.bless)=1 swift test creates it)"
                Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
                return
            }
            if expected == actual {
                try? FileManager.default.removeItem(at: actualURL)
                return
            }
            try actual.write(to: actualURL, atomically: true, encoding: .utf8)
            let diff = unifiedDiff(expected, actual, from: name + ".expected", to: name + ".actual")
            let message = "\(name): output differs from the golden file (written to \(actualURL.path); "
                + "\(EnvironmentName.bless)=1 swift test accepts it):\n\(diff)"
            Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(name): \(error)", sourceLocation: sourceLocation)
        }
    }

    /// A unified diff of two texts by lines (longest common subsequence; golden files are small).
    static func unifiedDiff(_ old: String, _ new: String, from: String, to: String) -> String {
        let a = old.split(separator: "\n", omittingEmptySubsequences: false)
        let b = new.split(separator: "\n", omittingEmptySubsequences: false)
        // lcs[i][j]: length of the longest common subsequence of a[i...] and b[j...].
        var lcs = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in stride(from: a.count - 1, through: 0, by: -1) {
            for j in stride(from: b.count - 1, through: 0, by: -1) {
                lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : max(lcs[i + 1][j], lcs[i][j + 1])
            }
        }
        // The edit script: (kind, old line index, new line index), kind " ", "-" or "+".
        var script: [(kind: Character, i: Int, j: Int)] = []
        var (i, j) = (0, 0)
        while i < a.count || j < b.count {
            if i < a.count, j < b.count, a[i] == b[j] {
                script.append((" ", i, j)); i += 1; j += 1
            } else if i < a.count, j == b.count || lcs[i + 1][j] >= lcs[i][j + 1] {
                script.append(("-", i, j)); i += 1  // deletions before insertions, as diff -u prints them
            } else {
                script.append(("+", i, j)); j += 1
            }
        }
        var out = "--- \(from)\n+++ \(to)\n"
        var index = 0
        while index < script.count {
            guard script[index].kind != " " else { index += 1; continue }
            // A hunk: this change and every change within 2 * context lines of the previous one.
            let start = max(0, index - context)
            var end = index
            var last = index
            while end < script.count {
                if script[end].kind != " " { last = end }
                if end - last > 2 * context { break }
                end += 1
            }
            end = min(script.count, last + context + 1)
            let hunk = script[start..<end]
            let oldCount = hunk.filter { $0.kind != "+" }.count
            let newCount = hunk.filter { $0.kind != "-" }.count
            out += "@@ -\(hunk.first!.i + 1),\(oldCount) +\(hunk.first!.j + 1),\(newCount) @@\n"
            for step in hunk {
                out += String(step.kind) + String(step.kind == "+" ? b[step.j] : a[step.i]) + "\n"
            }
            index = end
        }
        return out
    }
}
