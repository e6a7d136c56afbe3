import StallAnalysis

/// A usage error: printed with the command's usage, exit code 64.
struct UsageError: Error {
    var message: String
}

/// A request for help: the usage is printed to standard output, exit code 0.
struct HelpRequested: Error {}

/// A minimal, strict scanner for one subcommand's arguments: `--name value`, `--name=value`, `-x value`,
/// boolean flags, `--` to end options, and `-` as a positional (standard input).
struct Arguments {
    private var remaining: [String]
    /// Positional arguments, in order.
    private(set) var positionals: [String] = []
    /// Everything after `--`, untouched.
    private(set) var afterDashDash: [String]? = nil
    private var values: [String: [String]] = [:]
    private var flags: Set<String> = []

    /// Scans `arguments` given the names that take a value and the names that are flags. Aliases map a short
    /// spelling (`-o`) to its long name (`--output`).
    init(_ arguments: [String], valued: Set<String>, flags flagNames: Set<String>, aliases: [String: String] = [:])
        throws
    {
        remaining = arguments
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                afterDashDash = Array(arguments[index...])
                break
            }
            if argument == "-h" || argument == "--help" { throw HelpRequested() }
            guard argument.hasPrefix("-"), argument != "-" else {
                positionals.append(argument)
                continue
            }
            var name = argument
            var inline: String? = nil
            if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--") {
                name = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            }
            name = aliases[name] ?? name
            if valued.contains(name) {
                if let inline {
                    values[name, default: []].append(inline)
                } else {
                    guard index < arguments.count else { throw UsageError(message: "\(name) needs a value") }
                    values[name, default: []].append(arguments[index])
                    index += 1
                }
            } else if flagNames.contains(name) {
                guard inline == nil else { throw UsageError(message: "\(name) takes no value") }
                flags.insert(name)
            } else {
                throw UsageError(message: "unknown option \(argument)")
            }
        }
    }

    /// The last value given for `name`, if any.
    func value(_ name: String) -> String? { values[name]?.last }

    /// Every value given for `name`, in order.
    func all(_ name: String) -> [String] { values[name] ?? [] }

    /// True when the flag was given.
    func flag(_ name: String) -> Bool { flags.contains(name) }

    /// The value of `name` as one of an enumeration's raw values.
    func choice<T: RawRepresentable & CaseIterable>(_ name: String, as type: T.Type) throws -> T?
    where T.RawValue == String {
        guard let raw = value(name) else { return nil }
        guard let parsed = T(rawValue: raw) else {
            let allowed = T.allCases.map(\.rawValue).joined(separator: "|")
            throw UsageError(message: "\(name) must be one of \(allowed), not '\(raw)'")
        }
        return parsed
    }
}
