extension ProfileReport {
    /// Frames of the heaviest stack the text prints whole; a deeper stack shows its root, `...` and its leaf end.
    static let stackLines = 16

    /// The summary as text that fits 80 columns (long names shortened as in ``StallReport/text()``; control
    /// characters shown as `?`): the inputs and the total, the top self and top total functions (count in the
    /// profile's unit, share, name), the heaviest stack (root first) and the hints.
    public func text() -> String {
        let width = StallReport.textWidth
        var lines = inputs.isEmpty ? ["profile: no input with data"] : inputs.map { input in
            let prefix = "profile (\(input.format.displayName)): "
            return prefix + ReportFormat.fit(input.path, width: width - prefix.count)
        }
        lines += StallReport.wrap("total \(totalText) in \(stacks) distinct stack\(stacks == 1 ? "" : "s")",
                                  first: "  ", indent: "    ")
        guard profile.total != 0 || !profile.topSelf.isEmpty else { return render(lines + ["  no samples"]) }
        lines += [""] + table("top self functions (the leaf of each stack)", heading: "self", topSelf, exact.selfCounts)
        lines += [""] + table("top total functions (anywhere on the stack, once per stack even when it recurs)",
                              heading: "total", topTotal, exact.totalCounts)
        let stack = profile.heaviestStack
        if !stack.isEmpty {
            lines.append("")
            lines += StallReport.wrap("heaviest stack: \(quantity(profile.heaviestStackCount, exact: exact.heaviest)), "
                + Self.percent(profile.heaviestStackCount / profile.total) + " (\(stack.count) frames, root first)",
                indent: "  ")
            let shown = stack.count <= Self.stackLines
                ? stack.map(Optional.some)
                : stack.prefix(3).map(Optional.some) + [nil] + stack.suffix(Self.stackLines - 4).map(Optional.some)
            lines += shown.map { name in
                name.map { "    " + ReportFormat.fit($0, width: width - 4) }
                    ?? "    ... (\(stack.count - Self.stackLines + 1) more frames)"
            }
        }
        if !profile.hints.isEmpty { lines.append("") }
        for hint in profile.hints { lines += StallReport.wrap("hint: " + hint.text, indent: "  ") }
        return render(lines)
    }

    private func render(_ lines: [String]) -> String {
        lines.map(StallReport.printable).joined(separator: "\n") + "\n"
    }

    /// `title`, then rows of count (right-aligned, in the profile's unit), share and name.
    private func table(_ title: String, heading: String, _ shares: ArraySlice<FunctionShare>,
                       _ exact: [String: ExactSum]) -> [String] {
        let counts = shares.map { amount($0.count, exact: exact[$0.function]) }
        let countWidth = max(heading.count, counts.map(\.count).max() ?? 0)
        let pad = { (text: String, width: Int) in String(repeating: " ", count: max(0, width - text.count)) + text }
        var lines = [title, "  " + pad(heading, countWidth) + "    share  function"]
        for (share, count) in zip(shares, counts) {
            let prefix = "  " + pad(count, countWidth) + "  " + pad(Self.percent(share.share), 7) + "  "
            lines.append(prefix + ReportFormat.fit(share.function, width: StallReport.textWidth - prefix.count))
        }
        return lines
    }

    /// The summary as JSON (schema `stallprof.profile-report/v1`, docs/REPORT.md), ending with a newline. Counts
    /// in the profile's unit (integers when whole), shares in [0, 1] with four decimals, names as `stallprof fold`
    /// prints them.
    public func json() -> String {
        let (unitName, scale): (String?, Double?) = switch unit {
        case nil: (nil, nil)
        case .samples: ("samples", nil)
        case .time(let scale): ("time", scale)
        case .named(let name): (name, nil)
        }
        let shares = { (list: ArraySlice<FunctionShare>, exact: [String: ExactSum]) in
            JSONValue.array(list.map {
                .object([("function", .string($0.function)), ("count", Self.count($0.count, exact[$0.function])),
                         ("share", .double(Self.share($0.share)))])
            })
        }
        let document: JSONValue = .object([
            ("schema", .string(Self.jsonSchema)),
            ("inputs", .array(inputs.map { .object([("path", .string($0.path)), ("format", .string($0.format.rawValue))]) })),
            ("unit", .text(unitName)), ("nanosecondsPerCount", scale.map { Self.count($0) } ?? .null),
            ("total", Self.count(profile.total, exact.total)), ("stacks", .int(stacks)),
            ("topSelf", shares(topSelf, exact.selfCounts)), ("topTotal", shares(topTotal, exact.totalCounts)),
            ("heaviestStack", .strings(profile.heaviestStack)),
            ("heaviestStackCount", Self.count(profile.heaviestStackCount, exact.heaviest)),
            ("heaviestStackShare", .double(Self.share(profile.heaviestStackCount / (profile.total > 0 ? profile.total : 1)))),
            ("hints", .strings(profile.hints.map(\.text))),
        ])
        return document.written() + "\n"
    }

    /// A count: its exact sum when there is one (integers exact up to 2^64-1), otherwise an integer when whole,
    /// never in exponent notation.
    private static func count(_ value: Double, _ exact: ExactSum? = nil) -> JSONValue {
        if let exact, !exact.overflowed, exact.fraction == 0 { return .literal(String(exact.whole)) }
        return JSONValue.count(value)
    }

    private static func share(_ value: Double) -> Double { ReportFormat.rounded(min(max(value, 0), 1), 4) }
}
