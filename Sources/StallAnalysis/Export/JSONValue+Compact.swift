/// JSON for exporters: ``JSONValue`` written without white space, straight into bytes (exports hold many
/// thousands of samples; the report's pretty form would only make them larger).
extension JSONValue {
    /// The value without white space, appended to `out`. Strings go through ``JSONValue/quoted(_:)``.
    func writeCompact(into out: inout [UInt8]) {
        switch self {
        case .null, .bool, .int, .double, .literal: out.append(contentsOf: written().utf8)
        case .string(let value): out.append(contentsOf: Self.quoted(value).utf8)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                item.writeCompact(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            Self.writeMembers(members, into: &out)
            out.append(UInt8(ascii: "}"))
        }
    }

    /// An object's members (`"key":value,...`) without white space and without the braces, appended to `out`.
    static func writeMembers(_ members: [(String, JSONValue)], into out: inout [UInt8]) {
        for (index, (key, value)) in members.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: quoted(key).utf8)
            out.append(UInt8(ascii: ":"))
            value.writeCompact(into: &out)
        }
    }

    /// The value without white space, as bytes ending in a newline.
    var compactBytes: [UInt8] {
        var out: [UInt8] = []
        writeCompact(into: &out)
        out.append(10)
        return out
    }

}
