/// A usage error: one line on standard error, a pointer to the command's help, exit code 64.
struct UsageError: Error {
    /// What is wrong, in one line.
    var message: String
}

/// One command-line option, declared once: its spellings, the name of its value (nil for a flag), its help and
/// its default. The parser, the validation of its value and the usage text all come from this declaration.
struct Option<Root> {
    /// Spellings, short one first: `["-o", "--output"]`.
    var names: [String]
    /// The value's name in the usage (`OUT`); nil for a flag.
    var valueName: String?
    /// What it does (wrapped to the usage's width).
    var help: String
    /// The default as the usage shows it, `(default: ...)`; nil shows none.
    var defaultText: String?
    /// The values it takes, when they are a fixed list (shell completions offer them); nil otherwise.
    var choices: [String]? = nil
    /// Sets `root` from the option's value (empty for a flag); throws ``UsageError`` for a bad value. Called once per
    /// occurrence, in order: a value given twice keeps the last, unless the option collects them.
    var apply: (inout Root, String) throws -> Void

    /// The first long spelling (for messages).
    var longName: String { names.last ?? "" }

    /// This option acting on the part of a larger root that `path` names: how a shared group joins a command.
    func lifted<Outer>(_ path: WritableKeyPath<Outer, Root>) -> Option<Outer> {
        let apply = self.apply
        var outer = Option<Outer>(names: names, valueName: valueName, help: help, defaultText: defaultText) { outer, raw in
            try apply(&outer[keyPath: path], raw)
        }
        outer.choices = choices
        return outer
    }
}

extension Option {
    /// A flag: no value; `set` runs when it is given.
    static func flag(_ names: String..., help: String, _ set: @escaping (inout Root) -> Void) -> Option {
        Option(names: names, valueName: nil, help: help, defaultText: nil) { root, _ in set(&root) }
    }

    /// An option whose value `apply` parses (and validates, throwing ``UsageError``).
    static func value(
        _ names: String..., value: String, help: String, default shown: String? = nil,
        _ apply: @escaping (inout Root, String) throws -> Void
    ) -> Option {
        Option(names: names, valueName: value, help: help, defaultText: shown, apply: apply)
    }

    /// Free text stored as given.
    static func text(
        _ names: String..., value: String, help: String, default shown: String? = nil,
        _ set: @escaping (inout Root, String) -> Void
    ) -> Option {
        Option(names: names, valueName: value, help: help, defaultText: shown) { root, raw in set(&root, raw) }
    }

    /// One of an enumeration's raw values; the usage lists them after `help`.
    static func choice<T: RawRepresentable & CaseIterable>(
        _ names: String..., value: String, help: String, default shown: T?,
        _ set: @escaping (inout Root, T) -> Void
    ) -> Option where T.RawValue == String {
        let allowed = T.allCases.map(\.rawValue).joined(separator: "|")
        let name = names.last ?? ""
        var option = Option(names: names, valueName: value, help: "\(help): \(allowed)", defaultText: shown?.rawValue) {
            root, raw in
            guard let parsed = T(rawValue: raw) else {
                throw UsageError(message: "\(name) must be one of \(allowed), not '\(raw)'")
            }
            set(&root, parsed)
        }
        option.choices = T.allCases.map(\.rawValue)
        return option
    }

    /// A whole number of at least `minimum`.
    static func integer(
        _ names: String..., value: String = "N", help: String, default shown: String?, minimum: Int = 1,
        _ set: @escaping (inout Root, Int) -> Void
    ) -> Option {
        let name = names.last ?? ""
        return Option(names: names, valueName: value, help: help, defaultText: shown) { root, raw in
            guard let parsed = Int(raw), parsed >= minimum else {
                let what = minimum == 1 ? "a positive whole number" : "a whole number of at least \(minimum)"
                throw UsageError(message: "\(name) takes \(what), not '\(raw)'")
            }
            set(&root, parsed)
        }
    }

    /// A finite number above `above` (exclusive) and at most `most`.
    static func number(
        _ names: String..., value: String, help: String, default shown: String?, above: Double = 0,
        most: Double = .greatestFiniteMagnitude, _ set: @escaping (inout Root, Double) -> Void
    ) -> Option {
        let name = names.last ?? ""
        return Option(names: names, valueName: value, help: help, defaultText: shown) { root, raw in
            guard let parsed = Double(raw), parsed.isFinite, parsed > above, parsed <= most else {
                let range = most == .greatestFiniteMagnitude ? "above \(UsageText.number(above))"
                    : "above \(UsageText.number(above)) and at most \(UsageText.number(most))"
                throw UsageError(message: "\(name) takes a number \(range), not '\(raw)'")
            }
            set(&root, parsed)
        }
    }
}

/// A titled list of options in a command's usage (`OPTIONS:`, `CAPTURES:`...). Shared groups are declared once
/// and lifted into every command that takes them.
struct OptionGroup<Root> {
    /// The heading, without the colon.
    var title: String
    /// The options, in usage order.
    var options: [Option<Root>]

    /// The group acting on the part of a larger root that `path` names.
    func lifted<Outer>(_ path: WritableKeyPath<Outer, Root>) -> OptionGroup<Outer> {
        OptionGroup<Outer>(title: title, options: options.map { $0.lifted(path) })
    }

    /// The group under another heading.
    func titled(_ title: String) -> OptionGroup {
        OptionGroup(title: title, options: options)
    }
}
