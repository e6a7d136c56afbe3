#if canImport(Glibc)
import Glibc
#endif

/// An sRGB colour with 8-bit channels.
struct RGB: Equatable {
    var r: Int
    var g: Int
    var b: Int

    /// `rgb(r,g,b)`, as SVG fills are written.
    var css: String { "rgb(\(r),\(g),\(b))" }

    /// Parses `rgb(r,g,b)` (a palette file's value), each channel 0 to 255; nil otherwise.
    init?(css text: Substring) {
        guard text.hasPrefix("rgb("), text.hasSuffix(")") else { return nil }
        let channels = text.dropFirst(4).dropLast().split(separator: ",", omittingEmptySubsequences: false)
            .map { Int($0.filter { $0 != " " }) }
        guard channels.count == 3, let r = channels[0], let g = channels[1], let b = channels[2],
            [r, g, b].allSatisfy({ (0...255).contains($0) })
        else { return nil }
        (self.r, self.g, self.b) = (r, g, b)
    }

    init(r: Int, g: Int, b: Int) { (self.r, self.g, self.b) = (r, g, b) }
}

/// How frames are coloured: deterministic by name (two hashes), by semantic palette, or by differential delta.
struct FrameColors {
    let palette: FlameGraphPalette
    let weightedHash: Bool

    /// The colour of a frame named `name`.
    func color(for name: Substring) -> RGB {
        if name == "--" { return RGB(r: 160, g: 160, b: 160) }
        if name == "-" { return RGB(r: 200, g: 200, b: 200) }
        let (v1, v2, v3) = weightedHash ? Self.weightedHashes(name) : Self.plainHashes(name)
        return Self.color(of: Self.resolve(palette, name), v1, v2, v3)
    }

    /// The colour of a frame named by the UTF-8 `name`, when it depends only on its bytes (a plain hash under a
    /// palette that does not look at the name); nil when ``color(for:)`` must look at the name.
    func color(forBytes name: UnsafeBufferPointer<UInt8>) -> RGB? {
        switch palette {
        case .java, .js, .perl: return nil
        default: break
        }
        guard !weightedHash else { return nil }
        if name.count == 1, name[0] == UInt8(ascii: "-") { return RGB(r: 200, g: 200, b: 200) }
        if name.count == 2, name[0] == UInt8(ascii: "-"), name[1] == UInt8(ascii: "-") {
            return RGB(r: 160, g: 160, b: 160)
        }
        let (v1, v2, v3) = Self.plainHashes(name)
        return Self.color(of: palette, v1, v2, v3)
    }

    /// The colour of a frame that changed by `delta` counts in a differential graph of `total` counts: red when it
    /// grew, blue when it shrank, light grey (250,250,250) when unchanged. The shade follows the change as a share
    /// of the graph, on a log scale: 0.001 % or less gets the lightest tint (the other channels at 210, a step of
    /// 40 from neutral, as flamegraph.pl's 210), 10 % or more the deepest (50), each tenfold change 40 more.
    /// So +0.02 % is (255,158,158), plainly pink, however large the graph's biggest change (flamegraph.pl scales
    /// linearly to the biggest change, and stallprof did too, to 100 + 150 x the rest: there +0.02 % next to a
    /// 50 % change was (255,250,250), indistinguishable from unchanged), and a colour means the same change in
    /// every graph. docs/FLAMEGRAPH.md has the table.
    static func differential(delta: Double, total: Double) -> RGB {
        guard delta != 0, delta.isFinite, total > 0 else { return RGB(r: 250, g: 250, b: 250) }
        let share = 100 * abs(delta) / total
        let position = min(max((log10(share) + 3) / 4, 0), 1)  // 0.001 % -> 0, 10 % -> 1
        let channel = 210 - Int((160 * position).rounded())
        return delta > 0 ? RGB(r: 255, g: channel, b: channel) : RGB(r: channel, g: channel, b: 255)
    }

    /// The background stops to use for `palette` when none is given (flamegraph.pl's defaults).
    static func defaultBackground(for palette: FlameGraphPalette) -> FlameGraphBackground {
        switch palette {
        case .mem: return .green
        case .io, .wakeup: return .blue
        case .red, .green, .blue, .aqua, .yellow, .purple, .orange: return .grey
        case .hot, .java, .js, .perl: return .yellow
        }
    }

    /// The single-hue scheme a name gets under a semantic palette.
    static func resolve(_ palette: FlameGraphPalette, _ name: Substring) -> FlameGraphPalette {
        switch palette {
        case .wakeup: return .aqua
        case .java:
            if let annotation = annotation(name) {
                switch annotation {
                case "k": return .orange
                case "i": return .aqua
                case "j": return .green
                default: break
                }
            }
            let body = name.hasPrefix("L") ? name.dropFirst() : name
            if name.contains("::") || name.hasPrefix("-[") || name.hasPrefix("+[") { return .yellow }
            if body.contains("/") || (body.contains(".") && !body.hasPrefix("["))
                || (body.first.map { $0.isASCII && $0.isUppercase } ?? false)
            {
                return .green
            }
            return .red
        case .js:
            if !name.isEmpty && name.allSatisfy({ $0 == " " }) { return .green }
            if name.hasSuffix("_[k]") { return .orange }
            if name.hasSuffix("_[j]") { return name.contains("/") ? .green : .aqua }
            if name.contains("::") { return .yellow }
            if name.contains(":") { return .aqua }
            if let slash = name.firstIndex(of: "/"), name[slash...].contains(".js") { return .green }
            return .red
        case .perl:
            if name.hasSuffix("_[k]") { return .orange }
            if name.contains("Perl") || name.contains(".pl") { return .green }
            if name.contains("::") { return .yellow }
            return .red
        default:
            return palette
        }
    }

    /// The letter of a trailing `_[x]` annotation (perf's kernel, JIT, inline marks), if any.
    static func annotation(_ name: Substring) -> Character? {
        guard name.utf8.last == UInt8(ascii: "]"), name.hasSuffix("]"), name.count >= 4 else { return nil }
        let tail = name.suffix(4)
        guard tail.hasPrefix("_[") else { return nil }
        return tail[tail.index(tail.startIndex, offsetBy: 2)]
    }

    /// The name without its `_[x]` annotation, as labels show it.
    static func deannotated(_ name: Substring) -> Substring {
        guard let letter = annotation(name), "kwij".contains(letter) else { return name }
        return name.dropLast(4)
    }

    /// flamegraph.pl's scheme formulas, from three numbers in 0...1.
    static func color(of scheme: FlameGraphPalette, _ v1: Double, _ v2: Double, _ v3: Double) -> RGB {
        func scale(_ base: Int, _ range: Double, _ v: Double) -> Int { base + Int(range * v) }
        switch scheme {
        case .hot: return RGB(r: scale(205, 50, v3), g: scale(0, 230, v1), b: scale(0, 55, v2))
        case .mem: return RGB(r: 0, g: scale(190, 50, v2), b: scale(0, 210, v1))
        case .io: return RGB(r: scale(80, 60, v1), g: scale(80, 60, v1), b: scale(190, 55, v2))
        case .red: return RGB(r: scale(200, 55, v1), g: scale(50, 80, v1), b: scale(50, 80, v1))
        case .green: return RGB(r: scale(50, 60, v1), g: scale(200, 55, v1), b: scale(50, 60, v1))
        case .blue: return RGB(r: scale(80, 60, v1), g: scale(80, 60, v1), b: scale(205, 50, v1))
        case .yellow: return RGB(r: scale(175, 55, v1), g: scale(175, 55, v1), b: scale(50, 20, v1))
        case .purple: return RGB(r: scale(190, 65, v1), g: scale(80, 60, v1), b: scale(190, 65, v1))
        case .aqua, .wakeup: return RGB(r: scale(50, 60, v1), g: scale(165, 55, v1), b: scale(165, 55, v1))
        case .orange: return RGB(r: scale(190, 65, v1), g: scale(90, 65, v1), b: 0)
        case .java, .js, .perl: return color(of: .hot, v1, v2, v3)
        }
    }

    /// Three numbers from a 64-bit FNV-1a hash of the whole name.
    static func plainHashes(_ name: Substring) -> (Double, Double, Double) { plainHashes(name.utf8) }

    /// Three numbers from a 64-bit FNV-1a hash of the name's UTF-8 bytes.
    static func plainHashes<Bytes: Sequence<UInt8>>(_ name: Bytes) -> (Double, Double, Double) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let first = Double(hash) / Double(UInt64.max)
        hash = hash &* 0x100_0000_01b3
        let second = Double(hash) / Double(UInt64.max)
        hash = hash &* 0x100_0000_01b3
        return (first, second, Double(hash) / Double(UInt64.max))
    }

    /// flamegraph.pl's `--hash`: a vector over the first three characters (after a `module`` prefix), early
    /// characters weighing most; the second and third numbers hash the reversed name.
    static func weightedHashes(_ name: Substring) -> (Double, Double, Double) {
        let forward = weightedHash(Array(name.utf8))
        let backward = weightedHash(Array(name.utf8.reversed()))
        return (forward, backward, backward)
    }

    private static func weightedHash(_ bytes: [UInt8]) -> Double {
        var body = bytes[...]
        if bytes.count > 1, let tick = bytes[1...].firstIndex(of: UInt8(ascii: "`")) {
            body = bytes[(tick + 1)...]
        }
        var vector = 0.0, weight = 1.0, max = 1.0, modulus = 10
        for byte in body.prefix(3) {
            vector += Double(Int(byte) % modulus) / Double(modulus - 1) * weight
            modulus += 1
            max += weight
            weight *= 0.7
        }
        return 1 - vector / max
    }
}
