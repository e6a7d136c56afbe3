import StallFormat

/// Parsing JSON inputs and naming what they are, for the speedscope importer's whole-shape check.
enum JSONDocument {
    /// The parsed document, or bad data naming the input, the line and byte offset, and what is wrong.
    static func parse(_ bytes: [UInt8], name: String) throws -> JSONNode {
        do {
            return try JSONParser.parse(bytes)
        } catch {
            throw StallError.badData(path: name, position: "line \(error.line) (byte \(error.offset))",
                                        reason: "invalid JSON: \(error.reason)")
        }
    }

    /// What a JSON document is, for messages: `a Chrome trace (traceEvents)`, `a Chrome .cpuprofile`, `JSON
    /// without speedscope's $schema (keys: ...)`...
    static func describe(_ document: JSONNode) -> String {
        if let items = document.elements {
            if case .object? = items.first, items.first?["ph"] != nil {
                return "a Chrome trace (a JSON array of trace events)"
            }
            return "a JSON array"
        }
        guard let keys = document.keys else { return "a JSON value that is not an object" }
        if document["traceEvents"] != nil { return "a Chrome trace (traceEvents)" }
        if document["nodes"] != nil, document["samples"] != nil { return "a Chrome .cpuprofile (nodes, samples)" }
        if let schema = document["$schema"]?.string { return "JSON with $schema \(schema.debugDescription)" }
        if document["$schema"] != nil { return "JSON whose $schema is not a string" }
        if document["profiles"] != nil, document["shared"] != nil {
            return "JSON shaped like speedscope but without speedscope's $schema"
        }
        let shown = Set(keys).sorted().prefix(5).map(\.debugDescription).joined(separator: ", ")
        return "JSON without speedscope's $schema (keys: \(shown.isEmpty ? "none" : shown))"
    }
}

/// Typed access to a parsed JSON document, with bad-data errors naming the input and the JSON path (built only
/// when there is an error: a profile has millions of values).
struct JSONShape {
    /// The input's name.
    let path: String

    /// Bad data at `location` (a JSON path such as `profiles[0].samples[3]`).
    func error(at location: String, _ reason: String) -> StallError {
        .badData(path: path, position: location, reason: reason)
    }

    /// `value` when it is an object, or bad data.
    func object(_ value: JSONNode?, at location: @autoclosure () -> String) throws -> JSONNode {
        guard case .object? = value else { throw error(at: location(), "expected an object") }
        return value!
    }

    /// The elements of `value` when it is an array, or bad data.
    func array(_ value: JSONNode?, at location: @autoclosure () -> String) throws -> [JSONNode] {
        guard let items = value?.elements else { throw error(at: location(), "expected an array") }
        return items
    }

    /// `value` when it is an array of numbers, or bad data.
    func numbers(_ value: JSONNode?, at location: @autoclosure () -> String) throws -> [Double] {
        guard case .numbers(let numbers)? = value else { throw error(at: location(), "expected an array of numbers") }
        return numbers
    }

    /// `value` as a whole number that fits an `Int`; nil otherwise.
    func integer(_ value: Double?) -> Int? {
        guard let value, value == value.rounded(), abs(value) < 9e15 else { return nil }
        return Int(value)
    }
}
