/// A small DEFLATE (RFC 1951) decoder for the start of a gzip (RFC 1952) member: enough to tell what a gzip
/// file holds (a pprof profile is a gzip-compressed protobuf), never to read whole inputs. It stops at `limit`
/// output bytes or where the input ends, and returns nil on anything malformed; it never traps.
enum Inflate {
    /// Up to `limit` bytes of what the gzip member starting at `gzip` decompresses to, or nil when it is not gzip
    /// or its start is corrupt. A member cut short returns what decoded so far.
    static func gzipPrefix(_ gzip: ArraySlice<UInt8>, limit: Int = 4096) -> [UInt8]? {
        let bytes = Array(gzip)
        guard bytes.count >= 18, bytes[0] == 0x1F, bytes[1] == 0x8B, bytes[2] == 8 else { return nil }
        let flags = bytes[3]
        var offset = 10
        if flags & 4 != 0 {  // FEXTRA
            guard offset + 2 <= bytes.count else { return nil }
            offset += 2 + Int(bytes[offset]) + Int(bytes[offset + 1]) << 8
        }
        for flag in [UInt8(8), 16] where flags & flag != 0 {  // FNAME, FCOMMENT: zero-terminated
            while offset < bytes.count, bytes[offset] != 0 { offset += 1 }
            offset += 1
        }
        if flags & 2 != 0 { offset += 2 }  // FHCRC
        guard offset < bytes.count else { return nil }
        var decoder = Decoder(input: bytes, byte: offset, limit: limit)
        return decoder.run()
    }

    /// The decoding state: a bit reader over the input and the output so far.
    private struct Decoder {
        let input: [UInt8]
        var byte: Int
        var bit = 0
        let limit: Int
        var out: [UInt8] = []

        init(input: [UInt8], byte: Int, limit: Int) {
            self.input = input
            self.byte = byte
            self.limit = limit
        }

        /// The next `count` bits, least significant first; nil past the end.
        mutating func bits(_ count: Int) -> Int? {
            var value = 0
            for index in 0..<count {
                guard byte < input.count else { return nil }
                value |= Int((input[byte] >> UInt8(bit)) & 1) << index
                bit += 1
                if bit == 8 { bit = 0; byte += 1 }
            }
            return value
        }

        /// Decodes blocks until the last one, the output limit or the end of the input; nil when corrupt before
        /// anything decoded.
        mutating func run() -> [UInt8]? {
            while out.count < limit {
                guard let final = bits(1), let type = bits(2) else { break }
                let ok: Bool
                switch type {
                case 0: ok = stored()
                case 1: ok = huffman(Huffman(lengths: Self.fixedLiteralLengths)!, Huffman(lengths: Array(repeating: 5, count: 30))!)
                case 2: ok = dynamic()
                default: ok = false
                }
                if !ok { return out.isEmpty ? nil : out }
                if final == 1 { break }
            }
            return Array(out.prefix(limit))
        }

        mutating func stored() -> Bool {
            if bit != 0 { bit = 0; byte += 1 }
            guard byte + 4 <= input.count else { return false }
            let length = Int(input[byte]) | Int(input[byte + 1]) << 8
            byte += 4
            let complete = byte + length <= input.count
            let end = min(byte + length, input.count)
            out.append(contentsOf: input[byte..<end])
            byte = end
            return complete
        }

        static let fixedLiteralLengths: [Int] =
            Array(repeating: 8, count: 144) + Array(repeating: 9, count: 112) + Array(repeating: 7, count: 24)
            + Array(repeating: 8, count: 8)

        mutating func dynamic() -> Bool {
            guard let literals = bits(5), let distances = bits(5), let codes = bits(4) else { return false }
            let order = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]
            var codeLengths = [Int](repeating: 0, count: 19)
            for index in 0..<(codes + 4) {
                guard let length = bits(3) else { return false }
                codeLengths[order[index]] = length
            }
            guard let codeTree = Huffman(lengths: codeLengths) else { return false }
            var lengths: [Int] = []
            let total = literals + 257 + distances + 1
            while lengths.count < total {
                guard let symbol = codeTree.decode(&self) else { return false }
                switch symbol {
                case 0...15: lengths.append(symbol)
                case 16:
                    guard let last = lengths.last, let repeatCount = bits(2) else { return false }
                    lengths += Array(repeating: last, count: 3 + repeatCount)
                case 17:
                    guard let repeatCount = bits(3) else { return false }
                    lengths += Array(repeating: 0, count: 3 + repeatCount)
                default:
                    guard let repeatCount = bits(7) else { return false }
                    lengths += Array(repeating: 0, count: 11 + repeatCount)
                }
            }
            guard lengths.count == total, let literalTree = Huffman(lengths: Array(lengths[0..<(literals + 257)])),
                let distanceTree = Huffman(lengths: Array(lengths[(literals + 257)...]))
            else { return false }
            return huffman(literalTree, distanceTree)
        }

        static let lengthBase = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99,
                                 115, 131, 163, 195, 227, 258]
        static let lengthExtra = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
        static let distanceBase = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025,
                                   1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577]
        static let distanceExtra = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11,
                                    12, 12, 13, 13]

        /// One compressed block; true at its end (or at the output limit).
        mutating func huffman(_ literals: Huffman, _ distances: Huffman) -> Bool {
            while out.count < limit {
                guard let symbol = literals.decode(&self) else { return false }
                if symbol < 256 {
                    out.append(UInt8(symbol))
                    continue
                }
                if symbol == 256 { return true }
                let index = symbol - 257
                guard index < Self.lengthBase.count, let extra = bits(Self.lengthExtra[index]),
                    let code = distances.decode(&self), code < Self.distanceBase.count,
                    let distanceExtra = bits(Self.distanceExtra[code])
                else { return false }
                let length = Self.lengthBase[index] + extra
                let distance = Self.distanceBase[code] + distanceExtra
                guard distance <= out.count else { return false }
                for _ in 0..<length { out.append(out[out.count - distance]) }
            }
            return true
        }
    }

    /// A canonical Huffman code, decoded bit by bit (fast enough for a few kilobytes).
    private struct Huffman {
        /// Number of codes of each length.
        var counts = [Int](repeating: 0, count: 16)
        /// Symbols ordered by code.
        var symbols: [Int] = []

        /// The code of `lengths` (per symbol, 0 = unused); nil when a length is out of range or no symbol is used.
        init?(lengths: [Int]) {
            for length in lengths {
                guard (0...15).contains(length) else { return nil }
                counts[length] += 1
            }
            counts[0] = 0
            guard counts.contains(where: { $0 > 0 }) else { return nil }
            for length in 1...15 {
                for (symbol, each) in lengths.enumerated() where each == length { symbols.append(symbol) }
            }
        }

        /// The next symbol, or nil.
        func decode(_ decoder: inout Decoder) -> Int? {
            var code = 0
            var first = 0
            var index = 0
            for length in 1...15 {
                guard let bit = decoder.bits(1) else { return nil }
                code |= bit
                let count = counts[length]
                if code - first < count { return symbols[index + code - first] }
                index += count
                first = (first + count) << 1
                code <<= 1
            }
            return nil
        }
    }
}
