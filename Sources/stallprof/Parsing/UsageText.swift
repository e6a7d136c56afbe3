/// The usage texts, generated from the declarations: every line fits in ``width`` columns.
enum UsageText {
    /// The widest line.
    static let width = 80
    /// Where option help starts.
    static let helpColumn = 24

    /// A subcommand's `--help`.
    static func render<Root>(_ command: Command<Root>) -> String {
        var lines = wrap("USAGE: stallprof \(command.name) \(command.synopsis)", indent: 0, hanging: 8)
        for paragraph in command.discussion.components(separatedBy: "\n\n") {
            lines.append("")
            lines += wrap(paragraph.split(whereSeparator: \.isNewline).joined(separator: " "), indent: 0)
        }
        if !command.arguments.isEmpty {
            lines += ["", "ARGUMENTS:"]
            for (name, text) in command.arguments { lines += row(name, text) }
        }
        let groups = command.groups.filter { !$0.options.isEmpty }
        for (index, group) in groups.enumerated() {
            lines += ["", group.title + ":"]
            for option in group.options { lines += row(label(option), help(option)) }
            if index == 0 { lines += row("-h, --help", "show this help") }
        }
        if groups.isEmpty { lines += ["", "OPTIONS:"] + row("-h, --help", "show this help") }
        return lines.joined(separator: "\n")
    }

    /// The root command's usage: one line per subcommand.
    static func root(_ commands: [Subcommand]) -> String {
        var lines = ["USAGE: stallprof <subcommand> [options]", "", "SUBCOMMANDS:"]
        for command in commands { lines += row(command.name, command.abstract, indent: 2, column: 14) }
        lines.append("")
        lines += wrap("'stallprof help <subcommand>' (or 'stallprof <subcommand> --help') shows its options; "
            + "'stallprof --version' (or -V, after any subcommand too) prints the version.", indent: 0)
        return lines.joined(separator: "\n")
    }

    /// `value` as the usage shows a number: `10`, not `10.0`.
    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }

    /// `-o, --output OUT`.
    static func label<Root>(_ option: Option<Root>) -> String {
        option.names.joined(separator: ", ") + (option.valueName.map { " " + $0 } ?? "")
    }

    /// The help with its default.
    static func help<Root>(_ option: Option<Root>) -> String {
        option.help + (option.defaultText.map { " (default: \($0))" } ?? "")
    }

    /// `label` then `text` from ``helpColumn``, wrapped; a label too wide for the column gets a line of its own.
    static func row(_ label: String, _ text: String, indent: Int = 2, column: Int = helpColumn) -> [String] {
        let lead = String(repeating: " ", count: indent) + label
        var body = wrap(text, indent: column)
        if lead.count + 2 <= column {
            body[0] = lead + String(body[0].dropFirst(lead.count))
            return body
        }
        return [lead] + body
    }

    /// `text` word-wrapped to ``width``: the first line indented by `indent`, the next ones by `indent + hanging`.
    /// A word longer than a line is cut after a `|` (a long list of choices), or else stays whole.
    static func wrap(_ text: String, indent: Int, hanging: Int = 0) -> [String] {
        var lines: [String] = []
        var line = String(repeating: " ", count: indent)
        var empty = true
        for whole in text.split(separator: " ") {
            var word = whole
            while line.count + (empty ? 0 : 1) + word.count > width,
                let cut = word.indices.last(where: { word[$0] == "|" && line.count + (empty ? 1 : 2) + word.distance(
                    from: word.startIndex, to: $0) <= width })
            {
                lines.append(line + (empty ? "" : " ") + word[...cut])
                line = String(repeating: " ", count: indent + hanging)
                empty = true
                word = word[word.index(after: cut)...]
            }
            if !empty && line.count + 1 + word.count > width {
                lines.append(line)
                line = String(repeating: " ", count: indent + hanging)
                empty = true
            }
            line += (empty ? "" : " ") + word
            empty = false
        }
        lines.append(line)
        return lines
    }
}
