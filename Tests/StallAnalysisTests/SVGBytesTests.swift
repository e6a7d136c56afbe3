import Testing

@testable import StallAnalysis

/// The flame graph's byte writer formats numbers and escapes text exactly as the String helpers do.
@Suite struct SVGBytesTests {
    static func written(_ body: (inout SVGBytes) -> Void) -> String {
        var out = SVGBytes(capacity: 64)
        body(&out)
        return String(decoding: out.bytes, as: UTF8.self)
    }

    static let values: [Double] = [
        0, -0.0, 1, 9, 10, 999, 1000, 1001, 999_999, 1_000_000, 1_234_567, 0.5, 0.004, 0.005, -0.004, -0.005, 1.23456,
        99.99995, 100, 33.333333, -12.5, 1e-7, 2.5e15, 9.2e18, 1.8e19, 5e19, -3e19, Double(UInt64.max),
        .infinity, -.infinity, .nan, .pi, 1_234_576.500001,
    ]

    @Test func numbersMatchTheStringFormatters() {
        var generator = SystemRandomNumberGenerator()
        var values = Self.values
        for _ in 0..<2000 {
            values.append(Double.random(in: 0...100, using: &generator))
            values.append(Double(UInt64.random(in: 0...10_000_000_000, using: &generator)))
            values.append(Double.random(in: -1e6...1e6, using: &generator))
        }
        for value in values {
            for digits in 0...4 {
                #expect(Self.written { $0.append(fixed: value, digits) } == fixed(value, digits), "\(value) \(digits)")
            }
            #expect(Self.written { $0.append(grouped: value) } == grouped(value), "\(value)")
            #expect(Self.written { $0.append(count: value) } == CountFormat.plain(value), "\(value)")
        }
        #expect(Self.written { $0.append(int: -42) } == "-42")
        #expect(Self.written { $0.append(unsigned: 7, width: 4) } == "0007")
        #expect(Self.written { $0.append(color: RGB(r: 205, g: 0, b: 55)) } == RGB(r: 205, g: 0, b: 55).css)
    }

    @Test func escapingMatchesXmlEscaped() {
        let texts = [
            "plain", #"Text<"a" & 'b'>.measure"#, "a\u{1}b\u{FFFF}c\u{FFFE}", "tab\tnew\nline\r", "été", "",
            "\u{FEFF}bom", "emoji 👍🏽 & more",
        ]
        for text in texts {
            var copy = text
            let out = copy.withUTF8 { bytes in Self.written { $0.append(escaped: bytes) } }
            #expect(out == xmlEscaped(text), "\(text)")
        }
    }
}
