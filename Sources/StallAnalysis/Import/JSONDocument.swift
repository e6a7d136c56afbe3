import Foundation

/// Parsing JSON inputs and naming what they are, for the speedscope importer's whole-shape check.
enum JSONDocument {
    /// The parsed document (`[String: Any]`, `[Any]`, `NSNumber`, `String`, `NSNull`), or bad data naming the
    /// input and what the parser reported.
    static func parse(_ bytes: [UInt8], name: String) throws -> Any {
        var body = bytes[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
        do {
            return try JSONSerialization.jsonObject(with: Data(body), options: [])
        } catch {
            let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
            throw AnalysisError.badData(path: name, position: "", reason: "invalid JSON (\(detail))")
        }
    }

    /// What a JSON document is, for messages: `a Chrome trace (traceEvents)`, `a Chrome .cpuprofile`, `JSON
    /// without speedscope's $schema (keys: ...)`...
    static func describe(_ document: Any) -> String {
        if let array = document as? [Any] {
            if let first = array.first as? [String: Any], first["ph"] != nil {
                return "a Chrome trace (a JSON array of trace events)"
            }
            return "a JSON array"
        }
        guard let object = document as? [String: Any] else { return "a JSON value that is not an object" }
        if object["traceEvents"] != nil { return "a Chrome trace (traceEvents)" }
        if object["nodes"] != nil, object["samples"] != nil { return "a Chrome .cpuprofile (nodes, samples)" }
        if let schema = object["$schema"] as? String { return "JSON with $schema \(schema.debugDescription)" }
        if object["$schema"] != nil { return "JSON whose $schema is not a string" }
        let keys = object.keys.sorted().prefix(5).map(\.debugDescription).joined(separator: ", ")
        if object["profiles"] != nil, object["shared"] != nil {
            return "JSON shaped like speedscope but without speedscope's $schema"
        }
        return "JSON without speedscope's $schema (keys: \(keys.isEmpty ? "none" : keys))"
    }
}

/// Typed access to a parsed JSON document, with bad-data errors naming the input and the JSON path.
struct JSONShape {
    /// The input's name.
    let path: String

    /// Bad data at `location` (a JSON path such as `profiles[0].samples[3]`).
    func error(at location: String, _ reason: String) -> AnalysisError {
        .badData(path: path, position: location, reason: reason)
    }

    /// `value` as an object, or bad data.
    func object(_ value: Any?, at location: String) throws -> [String: Any] {
        guard let object = value as? [String: Any] else { throw error(at: location, "expected an object") }
        return object
    }

    /// `value` as an array, or bad data.
    func array(_ value: Any?, at location: String) throws -> [Any] {
        guard let array = value as? [Any] else { throw error(at: location, "expected an array") }
        return array
    }

    /// `value` as a number; nil for anything else (null included).
    func number(_ value: Any?) -> Double? {
        guard let value, !(value is NSNull), !(value is String) else { return nil }
        if let number = value as? NSNumber { return number.doubleValue }
        if let number = value as? Double { return number }
        if let number = value as? Int { return Double(number) }
        return nil
    }

    /// `value` as a whole number that fits an `Int`; nil otherwise.
    func integer(_ value: Any?) -> Int? {
        guard let number = number(value), number == number.rounded(), abs(number) < 9e15 else { return nil }
        return Int(number)
    }
}
