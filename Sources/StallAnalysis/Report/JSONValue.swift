/// A JSON value with ordered object keys, written by hand so the report's keys keep the documented order.
enum JSONValue {
    case null
    case bool(Bool)
    case int(Int)
    /// Written with Swift's shortest round-trip form, in plain decimal when that form has an exponent (JSON readers
    /// and people see `100000000000000000000`, not `1e+20`); not finite writes `null`.
    case double(Double)
    /// A number already written as JSON (an exact count: ``CountFormat/exact(whole:fraction:)``).
    case literal(String)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    /// An optional double, or null.
    static func number(_ value: Double?) -> JSONValue { value.map(JSONValue.double) ?? .null }
    /// A count: an integer when it is one (exact up to 2^64-1, never in exponent notation), else a double.
    static func count(_ value: Double) -> JSONValue {
        value == value.rounded() && abs(value) < 18_446_744_073_709_551_616 ? .literal(CountFormat.plain(value)) : .double(value)
    }
    /// An optional string, or null.
    static func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
    /// An array of strings.
    static func strings(_ values: [String]) -> JSONValue { .array(values.map(JSONValue.string)) }

    /// Pretty-printed with two-space indentation; arrays and objects without nested containers stay on one line
    /// when short.
    func written(indent: String = "") -> String {
        switch self {
        case .null: return "null"
        case .bool(let value): return value ? "true" : "false"
        case .int(let value): return String(value)
        case .double(let value):
            guard value.isFinite else { return "null" }
            let text = "\(value)"
            return text.contains("e") ? CountFormat.plain(value) : text
        case .literal(let text): return text
        case .string(let value): return Self.quoted(value)
        case .array(let items):
            guard !items.isEmpty else { return "[]" }
            let inner = indent + "  "
            // The flat form only for scalars: writing nested containers twice per level is exponential in depth.
            if items.allSatisfy(\.isScalar) {
                let flat = "[" + items.map { $0.written() }.joined(separator: ", ") + "]"
                if flat.count + indent.count <= 100 { return flat }
            }
            return "[\n" + items.map { inner + $0.written(indent: inner) }.joined(separator: ",\n") + "\n\(indent)]"
        case .object(let members):
            guard !members.isEmpty else { return "{}" }
            if members.allSatisfy({ $0.1.isScalar }) {
                let flat = "{" + members.map { Self.quoted($0.0) + ": " + $0.1.written() }.joined(separator: ", ") + "}"
                if flat.count + indent.count <= 100 { return flat }
            }
            let inner = indent + "  "
            return "{\n" + members.map { inner + Self.quoted($0.0) + ": " + $0.1.written(indent: inner) }
                .joined(separator: ",\n") + "\n\(indent)}"
        }
    }

    private var isScalar: Bool {
        switch self {
        case .array(let items): return items.isEmpty
        case .object(let members): return members.isEmpty
        default: return true
        }
    }

    /// `value` as a JSON string: quotes, backslashes and control characters escaped.
    static func quoted(_ value: String) -> String {
        // Most names need no escape: copy them whole (0xE2 leads U+2028 and U+2029, which are escaped).
        if !value.utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C || $0 == 0x7F || $0 == 0xE2 }) {
            return "\"" + value + "\""
        }
        var result = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F || scalar.value == 0x2028 || scalar.value == 0x2029 {
                    let hex = String(scalar.value, radix: 16)
                    result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result + "\""
    }
}
