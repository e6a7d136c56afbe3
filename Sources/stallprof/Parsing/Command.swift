/// A subcommand as the root command sees it: its name, its one-line summary, its usage and how to run it.
protocol Subcommand {
    /// `fold`, `report`...
    var name: String { get }
    /// One line for the root usage.
    var abstract: String { get }
    /// The whole `--help` text (also printed by `stallprof help NAME`).
    var usage: String { get }
    /// Parses `arguments` (what follows the subcommand's name) and runs it. `--help` throws ``HelpRequested``.
    func run(_ arguments: [String]) throws
    /// True when the command takes the option spelled `name`.
    func accepts(_ name: String) -> Bool
    /// Its options by group, for completions and the man page.
    var optionGroups: [(title: String, options: [OptionSpec])] { get }
    /// What follows its name in the usage line.
    var synopsis: String { get }
    /// Its description paragraphs.
    var discussion: String { get }
}

/// An option as completions and the man page see it (the declaration without its action).
struct OptionSpec {
    /// Spellings, short one first.
    var names: [String]
    /// The value's name; nil for a flag.
    var valueName: String?
    /// Its help, with its default.
    var help: String
    /// The values it takes, when a fixed list.
    var choices: [String]?
    /// True when its value is a file (completions offer files).
    var takesFile: Bool { ["FILE", "OUT", "OUT.svg", "DIR", "BEFORE", "AFTER"].contains(valueName ?? "") }
}

/// A request for help: the usage is printed to standard output, exit code 0.
struct HelpRequested: Error {}

/// A request for the version (`--version`, `-V`, after any subcommand too): printed to standard output, exit 0.
struct VersionRequested: Error {}

/// What the parser hands a command: its options, filled in from the declarations, and the other arguments.
struct Invocation<Root> {
    /// The options, starting from the command's defaults.
    var options: Root
    /// Positional arguments, in order (`-` is one: standard input).
    var positionals: [String] = []
    /// Everything after `--`, untouched, for a command that runs a program; nil without `--`. Other commands get
    /// what follows `--` as positionals (a file named `-x`).
    var command: [String]? = nil
}

/// A subcommand declared as data: synopsis, description, option groups and what it does with the result.
struct Command<Root>: Subcommand {
    let name: String
    let abstract: String
    /// What follows `stallprof NAME` in the usage line, e.g. `[options] [FILE ... | -]`.
    let synopsis: String
    /// Paragraphs of description, separated by blank lines; wrapped to the usage width.
    let discussion: String
    /// The option groups, in usage order.
    let groups: [OptionGroup<Root>]
    /// Rows describing positional arguments (`FILE`, `-- COMMAND`), printed after the options.
    var arguments: [(String, String)] = []
    /// True when what follows `--` is a program to run (``Invocation/command``), not more positionals.
    var runsProgram = false
    /// The options before any argument is read.
    let defaults: Root
    /// Runs the command once the arguments are parsed and every option's value is valid.
    let body: (Invocation<Root>) throws -> Void

    var usage: String { UsageText.render(self) }

    func run(_ arguments: [String]) throws {
        try body(parse(arguments))
    }

    func accepts(_ name: String) -> Bool { table[name] != nil }

    var optionGroups: [(title: String, options: [OptionSpec])] {
        groups.filter { !$0.options.isEmpty }.map { group in
            (group.title, group.options.map {
                OptionSpec(names: $0.names, valueName: $0.valueName, help: UsageText.help($0), choices: $0.choices)
            })
        }
    }

    /// Every option of every group, by spelling. Two options spelled alike are a programming error.
    private var table: [String: Option<Root>] {
        var table: [String: Option<Root>] = [:]
        for option in groups.flatMap(\.options) {
            for name in option.names {
                precondition(table[name] == nil, "stallprof \(self.name): \(name) declared twice")
                table[name] = option
            }
        }
        return table
    }

    /// Scans `arguments`: `--name value`, `--name=value`, `-x value`, flags, `--` ends the options, `-` is a
    /// positional (standard input). Unknown options, missing values and values given to flags are usage errors.
    func parse(_ arguments: [String]) throws -> Invocation<Root> {
        let table = self.table
        var invocation = Invocation(options: defaults)
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                if runsProgram {
                    invocation.command = Array(arguments[index...])
                } else {
                    invocation.positionals += arguments[index...]
                }
                break
            }
            if argument == "-h" || argument == "--help" { throw HelpRequested() }
            if argument == "-V" || argument == "--version" { throw VersionRequested() }
            guard argument.hasPrefix("-"), argument != "-" else {
                invocation.positionals.append(argument)
                continue
            }
            var name = argument
            var inline: String? = nil
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            }
            guard let option = table[name] else { throw UsageError(message: "unknown option '\(name)'") }
            if option.valueName == nil {
                guard inline == nil else { throw UsageError(message: "\(name) takes no value") }
                try option.apply(&invocation.options, "")
            } else if let inline {
                try option.apply(&invocation.options, inline)
            } else {
                guard index < arguments.count else { throw UsageError(message: "\(name) needs a value") }
                try option.apply(&invocation.options, arguments[index])
                index += 1
            }
        }
        return invocation
    }
}
