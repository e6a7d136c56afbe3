import Foundation
import Testing

/// The usage texts and usage errors every subcommand gets from its option declarations.
@Suite struct UsageTests {
    static let commands = ["fold", "flamegraph", "diff", "export", "report", "symbolicate", "bisect", "check", "completions", "man"]

    @Test func rootHelpListsEverySubcommand() throws {
        let help = try CLI.run(["--help"])
        #expect(help.status == 0 && help.err.isEmpty)
        let listed = help.out.split(separator: "\n").drop { $0 != "SUBCOMMANDS:" }.dropFirst()
            .prefix { !$0.isEmpty }.filter { $0.hasPrefix("  ") && !$0.hasPrefix("   ") }
            .map { String($0.split(separator: " ")[0]) }
        #expect(listed == Self.commands)
        #expect(try CLI.run(["help"]).out == help.out)
    }

    @Test(arguments: commands) func helpCommandPrintsExactlyWhatDashDashHelpPrints(_ command: String) throws {
        let help = try CLI.run(["help", command])
        let dashDash = try CLI.run([command, "--help"])
        let dashH = try CLI.run([command, "-h", "--bogus"])  // help wins over the rest of the line
        #expect(help.status == 0 && dashDash.status == 0 && dashH.status == 0)
        #expect(help.out == dashDash.out && help.out == dashH.out)
        #expect(help.out.hasPrefix("USAGE: stallprof \(command) "))
        #expect(help.err.isEmpty && dashDash.err.isEmpty)
        let wide = help.out.split(separator: "\n").filter { $0.count > 80 }
        #expect(wide.isEmpty, "\(command): lines over 80 columns: \(wide)")
        // Each option is listed once, with its default where it has one.
        let options = help.out.split(separator: "\n").filter { $0.hasPrefix("  -") }.map { $0.dropFirst(2).prefix { $0 != " " } }
        #expect(Set(options).count == options.count, "\(command): an option listed twice")
    }

    @Test(arguments: commands) func aUsageErrorIsOneLineAndAPointerToTheHelp(_ command: String) throws {
        let result = try CLI.run([command, "--bogus", "x"])
        #expect(result.status == 64)
        #expect(result.out.isEmpty)
        #expect(result.err == "stallprof: error: unknown option '--bogus'\nsee `stallprof \(command) --help`\n")
    }

    @Test func badValuesMissingValuesAndMissingArgumentsAreUsageErrors() throws {
        let cases: [([String], String)] = [
            (["report", "--top", "0", "x"], "stallprof: error: --top takes a positive whole number, not '0'"),
            (["fold", "--kind", "frozen", "-"], "stallprof: error: --kind must be one of all|stall|saturated, not 'frozen'"),
            (["flamegraph", "--width", "10", "-"], "stallprof: error: --width takes a whole number of at least 40, not '10'"),
            (["diff", "--range", "5..1", "a", "b"], "stallprof: error: --range takes FROM..TO in milliseconds, not '5..1'"),
            (["export", "--untimed-ms", "-1", "-"], "stallprof: error: --untimed-ms takes a number above 0 and at most 1000000000, not '-1'"),
            (["check", "--window"], "stallprof: error: --window needs a value"),
            (["bisect", "--resume=yes"], "stallprof: error: --resume takes no value"),
            (["diff", "only-one"], "stallprof: error: diff takes exactly two inputs: BEFORE AFTER"),
            (["export", "-"], "stallprof: error: --format is required: speedscope, chrome-trace, pprof or perfetto"),
            (["check", "--", ], "stallprof: error: no command after --"),
        ]
        for (arguments, message) in cases {
            let result = try CLI.run(arguments)
            #expect(result.status == 64, "\(arguments)")
            #expect(result.err == "\(message)\nsee `stallprof \(arguments[0]) --help`\n", "\(arguments)")
        }
    }

    @Test func unknownSubcommandsAndHelpTopics() throws {
        let unknown = try CLI.run(["frobnicate"])
        #expect(unknown.status == 64 && unknown.err == "stallprof: error: unknown subcommand 'frobnicate'\nsee `stallprof --help`\n")
        let topic = try CLI.run(["help", "frobnicate"])
        #expect(topic.status == 64 && topic.err.hasPrefix("stallprof: error: help takes one subcommand name"))
        let none = try CLI.run([])
        #expect(none.status == 64 && none.err.contains("SUBCOMMANDS:"))
    }
}

/// `--` ends the options: for commands that read files, what follows is files (even one named like an option).
@Suite struct DashDashTests {
    @Test func afterDashDashComeFiles() throws {
        let directory = CLI.temporary("dashdash")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data("main;x 1\n".utf8).write(to: URL(fileURLWithPath: directory + "/-x.folded"))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CLI.path)
        process.arguments = ["fold", "--", "-x.folded"]
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0 && text == "main;x 1\n")
    }
}
