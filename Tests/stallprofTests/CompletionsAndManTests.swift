import Foundation
import Testing

/// `stallprof completions` and `stallprof man`, generated from the declared options: every option of every command
/// is in them, bash completes for real, and the other shells and groff read what is written (each where installed).
@Suite struct CompletionsAndManTests {
    /// Every long option of every command, from their `--help`.
    func optionsByCommand() throws -> [String: Set<String>] {
        var result: [String: Set<String>] = [:]
        for command in ["fold", "flamegraph", "diff", "export", "report", "bisect", "check"] {
            let help = try CLI.run(["help", command]).out
            let words = help.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\n" })
            result[command] = Set(words.filter { $0.hasPrefix("--") && $0.count > 2 && !$0.contains("=") }.map(String.init)
                .filter { $0.allSatisfy { $0 == "-" || $0.isLetter || $0.isNumber } })
        }
        return result
    }

    /// Runs `script` in bash with the completion script sourced; its standard output.
    func bash(_ completion: String, _ script: String) throws -> String {
        let file = CLI.temporary("completion.bash")
        defer { unlink(file) }
        try completion.write(toFile: file, atomically: true, encoding: .utf8)
        return try CLI.run(["-c", "source \(file); \(script)"], executable: "/bin/bash").out
    }

    @Test func bashCompletesSubcommandsOptionsAndChoices() throws {
        let script = try CLI.run(["completions", "bash"])
        #expect(script.status == 0)
        let complete = { (words: [String]) in
            try self.bash(script.out, "COMP_WORDS=(\(words.map { "'\($0)'" }.joined(separator: " "))); "
                + "COMP_CWORD=\(words.count - 1); _stallprof; echo \"${COMPREPLY[*]}\"")
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(try complete(["stallprof", "fl"]) == "flamegraph")
        #expect(try complete(["stallprof", "fold", "--st"]) == "--strict --state --stall")
        #expect(try complete(["stallprof", "report", "--state", ""]) == "all busy blocked")
        #expect(try complete(["stallprof", "export", "--format", "pp"]) == "pprof")
        for (command, options) in try optionsByCommand() {
            for option in options {
                #expect(try complete(["stallprof", command, option]).split(separator: " ").contains(Substring(option)),
                        "\(command) \(option)")
            }
        }
        #expect(try CLI.run(["completions", "tcsh"]).status == 64)
    }

    @Test func zshAndFishReadTheirScripts() throws {
        let shells: [(String, [String])] = [("zsh", ["-n"]), ("fish", ["--no-execute"])]
        for (shell, check) in shells {
            let candidates: [String] = ["/usr/bin/" + shell, "/bin/" + shell]
            guard let path = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
                print("CompletionsAndManTests: \(shell) is not installed; its script's syntax is not checked")
                continue
            }
            let file = CLI.temporary("completion." + shell)
            defer { unlink(file) }
            let script: String = try CLI.run(["completions", shell]).out
            try script.write(toFile: file, atomically: true, encoding: .utf8)
            let result = try CLI.run(check + [file], executable: path)
            #expect(result.status == 0, "\(shell): \(result.err)")
            if shell == "fish" {  // fish completes for real from a script
                let offered = try CLI.run(["-c", "source \(file); complete -C 'stallprof report --state '"], executable: path)
                #expect(offered.out.split(separator: "\n").map { $0.prefix { $0 != "\t" } } == ["all", "blocked", "busy"],
                        "\(offered.out)")
            }
        }
    }

    @Test func theManPageHasEveryCommandAndOptionAndGroffReadsIt() throws {
        let page = try CLI.run(["man"])
        #expect(page.status == 0 && page.out.hasPrefix(".TH STALLPROF 1"))
        for (command, options) in try optionsByCommand() {
            #expect(page.out.contains(".SS \"stallprof \(command) "), "\(command)")
            for option in options where option != "--help" {
                #expect(page.out.contains("\\fB" + option.replacingOccurrences(of: "-", with: "\\-") + "\\fR"),
                        "\(command) \(option)")
            }
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/groff") else {
            print("CompletionsAndManTests: groff is not installed; the page is not rendered")
            return
        }
        let file = CLI.temporary("stallprof.1")
        defer { unlink(file) }
        try page.out.write(toFile: file, atomically: true, encoding: .utf8)
        let rendered = try CLI.run(["-man", "-Tutf8", "-P-bcou", file], executable: "/usr/bin/groff")
        #expect(rendered.status == 0 && rendered.err.isEmpty, "\(rendered.err)")
        #expect(rendered.out.contains("EXIT STATUS"))
    }
}
