#if canImport(Glibc)
import Glibc
#endif
import StallAnalysis
import StallFormat

/// flamegraph.pl's palette file (`--cp`, `palette.map`; inferno's `--palette-file`): one `name->rgb(r,g,b)` line
/// per function, sorted, read before drawing and written after, so a function keeps its colour across graphs.
enum PaletteFile {
    /// The map in `path`; empty when the file does not exist yet. A line is split at its last `->` (Swift names
    /// hold `->` themselves; flamegraph.pl splits at the first and misreads them); a line without one, or whose
    /// colour is not `rgb(r,g,b)`, is skipped with a warning (once per file).
    static func read(_ path: String) throws -> [String: String] {
        guard access(path, F_OK) == 0 else { return [:] }
        let bytes: [UInt8]
        do { bytes = try FileReader.contents(of: path) } catch {
            throw StallError.input(path: path, reason: "\(error)")
        }
        let text = String(decoding: bytes, as: UTF8.self)
        var map: [String: String] = [:]
        var skipped = 0
        for line in text.split(separator: "\n") {
            guard let arrow = line.ranges(of: "->").last, FlameGraphOptions.isPaletteColor(line[arrow.upperBound...])
            else {
                skipped += 1
                continue
            }
            map[String(line[..<arrow.lowerBound])] = String(line[arrow.upperBound...])
        }
        if skipped > 0 {
            Output.error("stallprof: warning: \(path): \(skipped) line\(skipped == 1 ? "" : "s") not NAME->rgb(R,G,B), ignored")
        }
        return map
    }

    /// Writes `map` to `path`, one `name->colour` line per entry, names in byte order (as flamegraph.pl's sort).
    static func write(_ map: [String: String], to path: String) throws {
        let names = map.keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        let text = names.map { "\($0)->\(map[$0]!)\n" }.joined()
        try Output.write(text, to: path)
    }
}
