/// A parsed JSON value. Arrays holding only numbers (speedscope's stacks and weights) are stored as `[Double]`,
/// 8 bytes a number, so a large profile costs about twice its file size in memory.
enum JSONNode {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    /// An array whose elements are all numbers (an empty array too).
    case numbers([Double])
    case array([JSONNode])
    /// Members in document order (objects are small; a repeated key reads as its last value).
    case object([(key: String, value: JSONNode)])

    /// The member `key` of an object; nil when this is not an object or has no such member.
    subscript(key: String) -> JSONNode? {
        guard case .object(let members) = self else { return nil }
        return members.last { $0.key == key }?.value
    }

    /// The string, or nil.
    var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The number, or nil.
    var number: Double? {
        if case .number(let value) = self { return value }
        return nil
    }

    /// The elements of an array (numbers wrapped), or nil when this is not an array.
    var elements: [JSONNode]? {
        switch self {
        case .array(let items): return items
        case .numbers(let values): return values.map(JSONNode.number)
        default: return nil
        }
    }

    /// The object's keys in document order, or nil.
    var keys: [String]? {
        if case .object(let members) = self { return members.map(\.key) }
        return nil
    }
}

/// A strict JSON parser (RFC 8259) over bytes, with errors that name the byte offset and line.
struct JSONParser {
    /// Deeper nesting is refused (no real profile nests this deep; recursion must stay bounded).
    static let maxDepth = 512

    private let bytes: [UInt8]
    private var at = 0

    /// Parses `bytes` (a UTF-8 byte order mark is skipped) into one value, with nothing after it but white space.
    static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> JSONNode {
        var parser = JSONParser(bytes: bytes)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.at = 3 }
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.at == bytes.count else { throw parser.error("data after the JSON value") }
        return value
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private func error(_ reason: String) -> JSONSyntaxError {
        let line = bytes[..<min(at, bytes.count)].reduce(1) { $1 == 10 ? $0 + 1 : $0 }
        return JSONSyntaxError(offset: at, line: line, reason: reason)
    }

    private mutating func skipSpace() {
        while at < bytes.count, bytes[at] == 32 || bytes[at] == 10 || bytes[at] == 13 || bytes[at] == 9 { at += 1 }
    }

    private mutating func expect(_ word: String, _ result: JSONNode) throws(JSONSyntaxError) -> JSONNode {
        for byte in word.utf8 {
            guard at < bytes.count, bytes[at] == byte else { throw error("expected \(word)") }
            at += 1
        }
        return result
    }

    private mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONNode {
        skipSpace()
        guard at < bytes.count else { throw error("unexpected end of input") }
        switch bytes[at] {
        case UInt8(ascii: "{"):
            guard depth < Self.maxDepth else { throw error("nested deeper than \(Self.maxDepth) levels") }
            at += 1
            var members: [(key: String, value: JSONNode)] = []
            skipSpace()
            if at < bytes.count, bytes[at] == UInt8(ascii: "}") {
                at += 1
                return .object(members)
            }
            while true {
                skipSpace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { throw error("expected a key string") }
                let key = try string()
                skipSpace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: ":") else { throw error("expected ':'") }
                at += 1
                members.append((key, try value(depth: depth + 1)))
                skipSpace()
                guard at < bytes.count else { throw error("unexpected end of input in an object") }
                at += 1
                if bytes[at - 1] == UInt8(ascii: "}") { return .object(members) }
                guard bytes[at - 1] == UInt8(ascii: ",") else { at -= 1; throw error("expected ',' or '}'") }
            }
        case UInt8(ascii: "["):
            guard depth < Self.maxDepth else { throw error("nested deeper than \(Self.maxDepth) levels") }
            at += 1
            var items: [JSONNode] = []
            var numbers: [Double]? = []
            skipSpace()
            if at < bytes.count, bytes[at] == UInt8(ascii: "]") {
                at += 1
                return .numbers([])
            }
            while true {
                let item = try value(depth: depth + 1)
                if case .number(let number) = item, numbers != nil {
                    numbers!.append(number)
                } else {
                    if let collected = numbers {
                        items = collected.map(JSONNode.number)
                        numbers = nil
                    }
                    items.append(item)
                }
                skipSpace()
                guard at < bytes.count else { throw error("unexpected end of input in an array") }
                at += 1
                if bytes[at - 1] == UInt8(ascii: "]") { return numbers.map(JSONNode.numbers) ?? .array(items) }
                guard bytes[at - 1] == UInt8(ascii: ",") else { at -= 1; throw error("expected ',' or ']'") }
            }
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try expect("true", .bool(true))
        case UInt8(ascii: "f"): return try expect("false", .bool(false))
        case UInt8(ascii: "n"): return try expect("null", .null)
        default: return .number(try number())
        }
    }

    private mutating func number() throws(JSONSyntaxError) -> Double {
        let start = at
        var integer = true
        if at < bytes.count, bytes[at] == UInt8(ascii: "-") { at += 1 }
        let digits = at
        while at < bytes.count, bytes[at] >= 48, bytes[at] <= 57 { at += 1 }
        guard at > digits else { throw error("unexpected character \(UnrecognizedLines.quote(bytes[start..<start + 1]))") }
        if bytes[digits] == 48, at - digits > 1 { throw error("a number with a leading zero") }
        if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
            integer = false
            at += 1
            let fraction = at
            while at < bytes.count, bytes[at] >= 48, bytes[at] <= 57 { at += 1 }
            guard at > fraction else { throw error("a number without digits after '.'") }
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
            integer = false
            at += 1
            if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
            let exponent = at
            while at < bytes.count, bytes[at] >= 48, bytes[at] <= 57 { at += 1 }
            guard at > exponent else { throw error("a number without exponent digits") }
        }
        if integer, at - digits <= 15 {
            let magnitude = bytes[digits..<at].reduce(0) { $0 * 10 + Int64($1 - 48) }
            return Double(digits > start ? -magnitude : magnitude)
        }
        guard let value = Double(String(decoding: bytes[start..<at], as: UTF8.self)) else {
            throw error("a number out of range")
        }
        return value
    }

    private mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
        guard at + 4 <= bytes.count else { throw error("a truncated \\u escape") }
        var value: UInt32 = 0
        for byte in bytes[at..<at + 4] {
            guard let digit = Character(UnicodeScalar(byte)).hexDigitValue else { throw error("a bad \\u escape") }
            value = value << 4 | UInt32(digit)
        }
        at += 4
        return value
    }

    private mutating func string() throws(JSONSyntaxError) -> String {
        at += 1  // the opening quote
        let start = at
        while at < bytes.count, bytes[at] != UInt8(ascii: "\""), bytes[at] != UInt8(ascii: "\\"), bytes[at] >= 0x20 {
            at += 1
        }
        guard at < bytes.count else { throw error("an unterminated string") }
        if bytes[at] == UInt8(ascii: "\"") {
            at += 1
            return String(decoding: bytes[start..<at - 1], as: UTF8.self)
        }
        var out = Array(bytes[start..<at])
        while true {
            guard at < bytes.count else { throw error("an unterminated string") }
            let byte = bytes[at]
            at += 1
            switch byte {
            case UInt8(ascii: "\""): return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard at < bytes.count else { throw error("an unterminated string") }
                at += 1
                switch bytes[at - 1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(bytes[at - 1])
                case UInt8(ascii: "b"): out.append(8)
                case UInt8(ascii: "f"): out.append(12)
                case UInt8(ascii: "n"): out.append(10)
                case UInt8(ascii: "r"): out.append(13)
                case UInt8(ascii: "t"): out.append(9)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if scalar >= 0xD800, scalar < 0xDC00, at + 6 <= bytes.count, bytes[at] == UInt8(ascii: "\\"),
                        bytes[at + 1] == UInt8(ascii: "u")
                    {
                        at += 2
                        let low = try hex4()
                        scalar = low >= 0xDC00 && low < 0xE000 ? 0x10000 + (scalar - 0xD800) << 10 + (low - 0xDC00) : 0xFFFD
                    }
                    out.append(contentsOf: String(UnicodeScalar(scalar).map(Character.init) ?? "\u{FFFD}").utf8)
                default: throw error("a bad escape in a string")
                }
            default:
                guard byte >= 0x20 else { throw error("a control character in a string") }
                out.append(byte)
            }
        }
    }
}

/// A JSON syntax error: where (byte offset, line) and what.
struct JSONSyntaxError: Error {
    var offset: Int
    var line: Int
    var reason: String
}
