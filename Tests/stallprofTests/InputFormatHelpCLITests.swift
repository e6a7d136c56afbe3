import StallAnalysis
import Testing

/// `--format`'s values in every reading command's help and in the completions are the format table's rows.
@Suite struct InputFormatHelpCLITests {
    @Test func helpAndCompletionsListTheFormatTable() throws {
        let names = InputFormat.allCases.map(\.rawValue)
        #expect(names == ["auto"] + InputFormat.table.map(\.format.rawValue))
        let listed = names.joined(separator: "|")
        for command in ["fold", "flamegraph", "diff", "report", "export"] {
            let help = try CLI.run([command, "--help"])
            let option = command == "export" ? "--input-format FORMAT" : "--format FORMAT"
            let lines = help.out.split(separator: "\n").map(String.init)
            let at = try #require(lines.firstIndex { $0.contains(option) }, "\(command)")
            #expect(help.status == 0 && lines[at...].prefix(3).contains { $0.contains(listed) }, "\(command)")
        }
        let bash = try CLI.run(["completions", "bash"])
        #expect(bash.out.contains("--format) COMPREPLY=($(compgen -W '\(names.joined(separator: " "))'"))
        let unknown = try CLI.run(["fold", "--format", "pprof", "-"], input: Array("a;b 1\n".utf8))
        #expect(unknown.status == 64 && unknown.err.contains("must be one of \(listed), not 'pprof'"))
    }
}
