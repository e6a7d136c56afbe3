/// Options of an SVG flame graph, named after flamegraph.pl's. Every field documents its default.
public struct FlameGraphOptions: Sendable, Equatable {
    /// The title at the top. Default: `"Flame Graph"` (the CLI, as flamegraph.pl, defaults to `"Icicle Graph"` with
    /// `--inverted` and to `"Flame Chart"` with `--flamechart`).
    public var title = "Flame Graph"
    /// A second line under the title. Default: nil, none.
    public var subtitle: String? = nil
    /// Width of the image in pixels. Default: 1200.
    public var width = 1200
    /// Height of one frame row in pixels (the rectangle is one pixel less). Default: 16.
    public var frameHeight = 16
    /// Frames narrower than this are left out (their children are narrower still). Default: 0.1 pixels.
    public var minWidth = MinWidth.pixels(0.1)
    /// What a count is called in tooltips (`N samples`). Default: nil, the profile's unit
    /// (``OrderedStacks/unit``): `samples` for captures, `sample` reports and folded text; perf script weighted by
    /// period: the event (`cycles`), or a duration for `cpu-clock`/`task-clock`; speedscope: its `unit`, times as
    /// durations (`1.23 ms`).
    public var countName: String? = nil

    /// The prefix of the details line when hovering a frame. Default: `"Function:"`.
    public var nameType = "Function:"
    /// Colour scheme of the frames. Default: `.hot`.
    public var palette = FlameGraphPalette.hot
    /// Background; nil picks the palette's usual one (yellow for hot, blue for io and wakeup, green for mem, grey
    /// for single-hue palettes). Default: nil.
    public var background: FlameGraphBackground? = nil
    /// Colour by a hash of the name that weights its first characters (flamegraph.pl's `--hash`): similar names get
    /// similar colours. Default: false, a plain hash of the whole name. Both are deterministic.
    public var hash = false
    /// Reverse each stack (leaf first) before merging: where the time is spent, regardless of the caller. Default:
    /// false.
    public var reverse = false
    /// Draw an icicle graph: roots at the top, growing down. Default: false.
    public var inverted = false
    /// Draw a flame chart: stacks in input order (time order), not sorted or merged across time; as flamegraph.pl
    /// and inferno, the input order is reversed so a newest-first input reads left to right. Default: false.
    public var flameChart = false
    /// Free text stored in an SVG comment. Default: empty.
    public var notes = ""
    /// Font size in points. Default: 12.
    public var fontSize = 12.0
    /// Font family. Default: `"Verdana"`.
    public var fontType = "Verdana"
    /// Average character width as a fraction of the font size, used to fit labels. Default: 0.59.
    public var fontWidth = 0.59
    /// For differential profiles: colour by before minus after instead of after minus before. Default: false.
    public var negate = false
    /// Fill of frames matching a search. Default: `"rgb(230,0,230)"`.
    public var searchColor = "rgb(230,0,230)"
    /// flamegraph.pl's `--total`: the count the whole width stands for, when larger than the profile's (so that
    /// graphs of several profiles share one scale); a smaller one is ignored, with a warning unless it is under 2 %
    /// of the profile's (flamegraph.pl's rule). Default: nil, the profile's total.
    public var total: Double? = nil
    /// Scales the counts tooltips print (flamegraph.pl's `--factor`: a profile sampled at 1 in 1000 read in
    /// events), rounded to whole counts as flamegraph.pl prints them; shares and widths do not change.
    /// Default: 1.
    public var factor = 1.0
    /// flamegraph.pl's `--cp`: frame colours by name from this map (`name` to `rgb(r,g,b)`, the lines of a
    /// palette file), so a function keeps its colour across graphs; names it lacks get their usual colour
    /// (``paletteEntries(_:)`` lists them to save). Differential and `-`/`--` frames keep theirs. Default: empty.
    public var paletteMap: [String: String] = [:]

    /// Creates the default options.
    public init() {}
}

/// A minimum frame width: absolute pixels, or a percentage of the whole graph.
public enum MinWidth: Sendable, Equatable {
    /// Pixels at the graph's width.
    case pixels(Double)
    /// Percent of the total count.
    case percent(Double)

    /// Parses `0.1` (pixels) or `0.5%`; nil when not a non-negative number.
    public init?(parsing text: String) {
        let isPercent = text.hasSuffix("%")
        guard let value = Double(isPercent ? String(text.dropLast()) : text), value >= 0, value.isFinite else {
            return nil
        }
        self = isPercent ? .percent(value) : .pixels(value)
    }

    /// The width in counts for a graph of `total` counts drawn `framesWidth` pixels wide.
    func counts(total: Double, framesWidth: Double) -> Double {
        switch self {
        case .pixels(let pixels): return pixels * total / framesWidth
        case .percent(let percent): return percent * total / 100
        }
    }
}

/// flamegraph.pl's colour schemes.
public enum FlameGraphPalette: String, Sendable, CaseIterable {
    /// Reds to yellows (CPU).
    case hot
    /// Greens to blues (memory).
    case mem
    /// Blues (I/O).
    case io
    /// Aqua (wake-ups).
    case wakeup
    /// Java: green JIT and Java frames, aqua inlined, yellow C++, orange kernel, red the rest.
    case java
    /// JavaScript: green JS files, aqua built-ins, yellow C++, orange kernel, red the rest.
    case js
    /// Perl: green Perl, yellow C++, orange kernel, red the rest.
    case perl
    /// Reds.
    case red
    /// Greens.
    case green
    /// Blues.
    case blue
    /// Aqua.
    case aqua
    /// Yellows.
    case yellow
    /// Purples.
    case purple
    /// Oranges.
    case orange
}

/// Background gradients (or a flat colour).
public enum FlameGraphBackground: Sendable, Equatable {
    /// `#eeeeee` to `#eeeeb0`.
    case yellow
    /// `#eeeeee` to `#e0e0ff`.
    case blue
    /// `#eef2ee` to `#e0ffe0`.
    case green
    /// `#f8f8f8` to `#e8e8e8`.
    case grey
    /// One colour, `#rrggbb`.
    case flat(String)

    /// Parses `yellow`, `blue`, `green`, `grey` or `#rrggbb`.
    public init?(parsing text: String) {
        switch text {
        case "yellow": self = .yellow
        case "blue": self = .blue
        case "green": self = .green
        case "grey", "gray": self = .grey
        default:
            let hex = text.dropFirst()
            guard text.hasPrefix("#"), hex.count == 6, hex.allSatisfy(\.isHexDigit) else { return nil }
            self = .flat(text)
        }
    }

    /// The two stops of the gradient.
    var stops: (String, String) {
        switch self {
        case .yellow: return ("#eeeeee", "#eeeeb0")
        case .blue: return ("#eeeeee", "#e0e0ff")
        case .green: return ("#eef2ee", "#e0ffe0")
        case .grey: return ("#f8f8f8", "#e8e8e8")
        case .flat(let colour): return (colour, colour)
        }
    }
}

extension FlameGraphOptions {
    /// True when `text` is a colour ``paletteMap`` takes: `rgb(r,g,b)`, each channel 0 to 255.
    public static func isPaletteColor(_ text: Substring) -> Bool { RGB(css: text) != nil }

    /// The palette-file entries (`name` to `rgb(r,g,b)`) of every frame name of `profile`: ``paletteMap``'s, else
    /// the colour this graph gives the name, so that saving them keeps the colours in later graphs (`--cp`).
    public func paletteEntries(_ profile: OrderedStacks) -> [String: String] {
        var entries = paletteMap
        let colors = FrameColors(palette: palette, weightedHash: hash)
        for stack in profile.stacks {
            for frame in stack.stack.split(separator: ";") where entries[String(frame)] == nil && frame != "-" && frame != "--" {
                entries[String(frame)] = colors.color(for: frame).css
            }
        }
        return entries
    }
}
