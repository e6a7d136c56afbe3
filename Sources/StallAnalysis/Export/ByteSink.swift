/// Where an exporter writes: bytes appended to a buffer that is handed on to a consumer (a file, standard output,
/// a gzip stream) whenever it holds ``chunkSize`` bytes, so an export never holds its whole output. Without a
/// consumer the sink keeps everything (``bytes``), for callers that want the output in memory.
public final class ByteSink {
    /// How many bytes are gathered before they are handed on (256 KiB).
    public static let chunkSize = 1 << 18

    /// Bytes written and not handed on yet (without a consumer: everything written).
    var buffer: [UInt8] = []
    private let consume: (([UInt8]) throws -> Void)?

    /// A sink that hands its bytes to `consume`, in pieces, in order; an error `consume` throws ends the export.
    public init(_ consume: @escaping ([UInt8]) throws -> Void) {
        self.consume = consume
        buffer.reserveCapacity(Self.chunkSize + 4096)
    }

    /// A sink that keeps everything written (``bytes``).
    public init() { consume = nil }

    /// Everything written so far, for a sink without a consumer; what is not handed on yet otherwise.
    public var bytes: [UInt8] { buffer }

    /// Appends `bytes`.
    @inline(__always)
    func write<C: Collection>(_ bytes: C) where C.Element == UInt8 { buffer.append(contentsOf: bytes) }

    /// Appends `text`'s UTF-8.
    @inline(__always)
    func write(_ text: String) { buffer.append(contentsOf: text.utf8) }

    /// Appends one byte.
    @inline(__always)
    func write(byte: UInt8) { buffer.append(byte) }

    /// Appends `value` in decimal, as `String(value)` spells it, without making a String.
    func write(decimal value: Int) {
        if value < 0 {
            buffer.append(UInt8(ascii: "-"))
            write(decimal: value.magnitude)
        } else {
            write(decimal: UInt(value))
        }
    }

    /// Appends `value` in decimal.
    func write(decimal value: UInt) {
        var digits = 1
        var rest = value
        while rest >= 10 {
            rest /= 10
            digits += 1
        }
        var position = buffer.count + digits
        buffer.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: digits))
        rest = value
        repeat {
            position -= 1
            buffer[position] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        } while rest > 0
    }

    /// Appends `value` as compact JSON.
    func write(json value: JSONValue) { value.writeCompact(into: &buffer) }

    /// Appends an object's members as compact JSON, without the braces (the writer opens and closes the object).
    func write(members: [(String, JSONValue)]) { JSONValue.writeMembers(members, into: &buffer) }

    /// Hands the buffer on when it holds a chunk. Writers call it between the pieces of their output.
    @inline(__always)
    public func flushIfFull() throws {
        if buffer.count >= Self.chunkSize { try flush() }
    }

    /// Hands on everything written (a sink without a consumer keeps it). Call it once the output is complete.
    public func flush() throws {
        guard let consume, !buffer.isEmpty else { return }
        try consume(buffer)
        buffer.removeAll(keepingCapacity: true)
    }
}
