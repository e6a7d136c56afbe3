import StallFormat

/// A growing UTF-8 output buffer with hand-rolled decimal formatting: the flame graph's frames are written here,
/// byte for byte what ``fixed(_:_:)``, ``grouped(_:)``, ``CountFormat/plain(_:)`` and ``xmlEscaped(_:)`` give,
/// without a String per number or per name (a real profile draws tens of thousands of frames).
struct SVGBytes {
    /// The bytes written so far.
    private(set) var bytes: [UInt8] = []

    /// An empty buffer with room for `capacity` bytes.
    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    /// Appends `text`'s UTF-8.
    mutating func append(_ text: String) { bytes.append(contentsOf: text.utf8) }

    /// Appends a literal's UTF-8.
    mutating func append(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Appends raw bytes.
    mutating func append(bytes other: UnsafeBufferPointer<UInt8>) { bytes.append(contentsOf: other) }

    /// Appends raw bytes.
    mutating func append(bytes other: [UInt8]) { bytes.append(contentsOf: other) }

    /// Appends `value` in decimal, `-` first when negative.
    mutating func append(int value: Int) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        append(unsigned: value.magnitude.toUInt64)
    }

    /// Appends `value` in decimal, left-padded with zeros to at least `width` digits.
    mutating func append(unsigned value: UInt64, width: Int = 1) {
        if value < 10 && width <= 1 { return bytes.append(UInt8(ascii: "0") + UInt8(value)) }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { digits in
            var rest = value
            var index = digits.count
            repeat {
                index -= 1
                digits[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            } while rest > 0
            while digits.count - index < width && index > 0 {
                index -= 1
                digits[index] = UInt8(ascii: "0")
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[index...]))
        }
    }

    /// Appends what ``fixed(_:_:)`` gives: exactly `digits` decimals, half away from zero.
    mutating func append(fixed value: Double, _ digits: Int) {
        guard value.isFinite else { return append("0" as StaticString) }
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        guard scaled < 9e18 else { return append(fixed(value, digits)) }
        let units = UInt64(scaled)
        let divisor = UInt64(scale)
        if value < 0 && units != 0 { bytes.append(UInt8(ascii: "-")) }
        append(unsigned: units / divisor)
        if digits > 0 {
            bytes.append(UInt8(ascii: "."))
            append(unsigned: units % divisor, width: digits)
        }
    }

    /// The count as an exact unsigned integer, when it is one below 2^64.
    private static func wholeCount(_ value: Double) -> UInt64? {
        guard value >= 0, value < 18_446_744_073_709_551_616.0, value == value.rounded() else { return nil }
        return UInt64(value)
    }

    /// Appends what ``CountFormat/plain(_:)`` gives.
    mutating func append(count value: Double) {
        if let whole = Self.wholeCount(value) { return append(unsigned: whole) }
        append(CountFormat.plain(value))
    }

    /// Appends what ``grouped(_:)`` gives: thousands separators.
    mutating func append(grouped value: Double) {
        guard let whole = Self.wholeCount(value) else { return append(grouped(value)) }
        append(groupedWhole: whole)
    }

    /// Appends `whole` with thousands separators.
    mutating func append(groupedWhole whole: UInt64) {
        if whole >= 1000 {
            append(groupedWhole: whole / 1000)
            bytes.append(UInt8(ascii: ","))
            append(unsigned: whole % 1000, width: 3)
        } else {
            append(unsigned: whole)
        }
    }

    /// Appends valid UTF-8 `text` escaped as ``xmlEscaped(_:)`` does; text with nothing to escape is copied as is.
    mutating func append(escaped text: UnsafeBufferPointer<UInt8>) {
        if text.contains(where: XMLEscaping.mayNeedEscaping) {
            append(xmlEscaped(String(decoding: text, as: UTF8.self)))
        } else {
            bytes.append(contentsOf: text)
        }
    }

    /// Appends `rgb(r,g,b)`, as ``RGB/css`` spells it.
    mutating func append(color: RGB) {
        append("rgb(" as StaticString)
        append(int: color.r)
        bytes.append(UInt8(ascii: ","))
        append(int: color.g)
        bytes.append(UInt8(ascii: ","))
        append(int: color.b)
        bytes.append(UInt8(ascii: ")"))
    }
}

extension UInt {
    fileprivate var toUInt64: UInt64 { UInt64(self) }
}
