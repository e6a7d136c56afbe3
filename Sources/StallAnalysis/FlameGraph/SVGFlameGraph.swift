import StallFormat

/// The interactive SVG flame graph (flamegraph.pl's output, drawn directly): self-contained, no network.
///
/// Each frame is a `<g>` in `<svg id="frames">` holding a `<title>` (`name (N samples, P%)`, plus the change for
/// differential profiles), a `<rect>` whose `x` and `width` are percentages of the frames area and whose `fg:x`
/// and `fg:w` are in counts, and a `<text>` label only when the name fits.
public struct SVGFlameGraph: StackRenderer {
    /// The options in use.
    public let options: FlameGraphOptions
    /// App markers to draw over a flame chart's time axis (``FlameGraphOptions/flameChart`` without `reverse`;
    /// ignored otherwise). Default: none.
    public var markers: [ChartMarker] = []

    /// Creates a renderer.
    public init(options: FlameGraphOptions = FlameGraphOptions()) { self.options = options }

    /// Creates a renderer that draws `markers` over a flame chart.
    public init(options: FlameGraphOptions, markers: [ChartMarker]) {
        self.options = options
        self.markers = markers
    }

    /// Horizontal padding on each side, pixels.
    static let xpad = 10.0

    /// The SVG for `profile`. An empty profile gives a small SVG saying so (and a warning).
    public func render(_ profile: OrderedStacks, diagnostics: inout Diagnostics) -> String {
        let framesWidth = Double(options.width) - 2 * Self.xpad
        let layout = FrameLayout(profile, options: options, framesWidth: framesWidth)
        return String(decoding: render(layout, profile, diagnostics: &diagnostics), as: UTF8.self)
    }

    /// The most frames ``render(_:maxFrames:input:diagnostics:)`` draws by default: about 150 to 400 MB of SVG.
    public static let maxFrames = 1_000_000

    /// The SVG for `profile`, or bad data naming `input` when it would draw more than `maxFrames` frames (its
    /// memory and size grow with the frames drawn; a real profile at the default minimum width draws far fewer).
    public func render(_ profile: OrderedStacks, maxFrames: Int = SVGFlameGraph.maxFrames, input: String,
                       diagnostics: inout Diagnostics) throws -> String
    {
        String(decoding: try renderBytes(profile, maxFrames: maxFrames, input: input, diagnostics: &diagnostics),
               as: UTF8.self)
    }

    /// The SVG for `profile` as UTF-8 bytes, as ``render(_:maxFrames:input:diagnostics:)`` (for writing out
    /// without another copy).
    public func renderBytes(_ profile: OrderedStacks, maxFrames: Int = SVGFlameGraph.maxFrames, input: String,
                            diagnostics: inout Diagnostics) throws -> [UInt8]
    {
        let framesWidth = Double(options.width) - 2 * Self.xpad
        let layout = FrameLayout(profile, options: options, framesWidth: framesWidth)
        guard layout.frames.count <= maxFrames else {
            throw StallError.badData(
                path: input, position: "",
                reason: "the graph would draw \(layout.frames.count) frames, more than \(maxFrames); "
                    + "raise --minwidth or select less (--state, --stall, --range)")
        }
        if let given = options.total, given < layout.counted, given / layout.counted > 0.02 {
            diagnostics.warn("--total \(FoldedStacks.format(given)) is less than the profile's total "
                + "\(FoldedStacks.format(layout.counted)), so ignored")
        }
        // As report says it: integral counts whose exact sum wrapped, or with fractions, a total of 2^64 or more.
        let exactTotal = profile.stacks.allSatisfy { $0.exact != nil }
        if exactTotal ? layout.frames.first(where: { $0.depth == 0 })?.exactWidth == nil && layout.total >= 9.2e18
            : layout.total >= FoldedCount.limit
        {
            diagnostics.warn("the profile's total exceeds 2^64-1: the root's count and the shares are rounded")
        }
        return render(layout, profile, diagnostics: &diagnostics)
    }

    /// The SVG of `profile` laid out as `layout`, as UTF-8.
    private func render(_ layout: FrameLayout, _ profile: OrderedStacks, diagnostics: inout Diagnostics) -> [UInt8] {
        let framesWidth = Double(options.width) - 2 * Self.xpad
        // Readers keep every count below 2^64, so a total is finite; a profile built by hand may not be, and is
        // drawn as empty rather than with NaN widths.
        guard layout.total > 0, layout.total.isFinite else {
            diagnostics.warn(layout.total > 0 ? "the counts add up to more than a finite number; nothing drawn"
                : "no stack counts found")
            var out = ""
            writeHeader(&out, height: options.fontSize * 5)
            out += "<text x=\"50%\" y=\"\(fixed(options.fontSize * 2, 2))\" text-anchor=\"middle\">"
            out += "ERROR: No valid input provided to flamegraph</text>\n</svg>\n"
            return Array(out.utf8)
        }
        let rows = markerRows(total: layout.total, framesWidth: framesWidth)
        let geometry = Geometry(options: options, maxDepth: layout.maxDepth + (rows.isEmpty ? 0 : rows.count + 1))
        var head = ""
        writeHeader(&head, height: geometry.height)
        writePrelude(&head, geometry: geometry, total: layout.total)
        var out = SVGBytes(capacity: 320 * layout.frames.count + head.utf8.count + 4096)
        out.append(head)
        writeFrames(&out, layout, geometry: geometry, framesWidth: framesWidth, counts: CountText(options, profile.unit),
                    places: profile.places)
        var tail = "</svg>\n"
        writeMarkers(&tail, rows: rows, geometry: geometry, total: layout.total, frameDepth: layout.maxDepth)
        tail += "</svg>\n"
        out.append(tail)
        return out.bytes
    }

    /// Vertical positions.
    struct Geometry {
        let options: FlameGraphOptions
        let height: Double
        let ypad1: Double
        let ypad2: Double

        init(options: FlameGraphOptions, maxDepth: Int) {
            self.options = options
            let subtitle = options.subtitle == nil ? 0 : options.fontSize * 2
            ypad1 = options.inverted ? options.fontSize * 4 + subtitle + 4 : options.fontSize * 3 + subtitle
            ypad2 = options.inverted ? options.fontSize + 10 : options.fontSize * 2 + 10
            height = Double((maxDepth + 1) * options.frameHeight) + ypad1 + ypad2
        }

        /// Top of the rectangle of a frame at `depth`.
        func y(depth: Int) -> Int {
            let row = Double(options.frameHeight)
            if options.inverted { return Int(ypad1 + Double(depth) * row) }
            return Int(height - ypad2 - Double(depth + 1) * row + 1)
        }
    }

    private func writeHeader(_ out: inout String, height: Double) {
        let h = FoldedStacks.format(height.rounded(.up))
        out += "<?xml version=\"1.0\" standalone=\"no\"?>\n"
        out += "<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" \"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\">\n"
        out += "<svg version=\"1.1\" width=\"\(options.width)\" height=\"\(h)\" onload=\"init(evt)\" "
        out += "viewBox=\"0 0 \(options.width) \(h)\" xmlns=\"http://www.w3.org/2000/svg\" "
        out += "xmlns:xlink=\"http://www.w3.org/1999/xlink\" xmlns:fg=\"https://stallprof.dev/flamegraph\">\n"
        out += "<!--Flame graph drawn by stallprof (after brendangregg/FlameGraph).-->\n"
    }

    private func writePrelude(_ out: inout String, geometry: Geometry, total: Double) {
        var notes = xmlEscaped(options.notes).replacingDashes()
        if notes.hasSuffix("-") { notes += " " }  // "--->" would end the comment badly
        out += "<!--NOTES: \(notes)-->\n"
        let (stop1, stop2) = (options.background ?? FrameColors.defaultBackground(for: options.palette)).stops
        out += "<defs><linearGradient id=\"background\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">"
        out += "<stop stop-color=\"\(stop1)\" offset=\"5%\"/><stop stop-color=\"\(stop2)\" offset=\"95%\"/>"
        out += "</linearGradient></defs>\n"
        out += "<style type=\"text/css\">\n"
        out += "text { font-family:\(cssFont(options.fontType)); font-size:\(FoldedStacks.format(options.fontSize))px; fill:rgb(0,0,0); }\n"
        out += "#title { text-anchor:middle; font-size:\(FoldedStacks.format(options.fontSize + 5))px; }\n"
        out += "#subtitle { text-anchor:middle; fill:rgb(160,160,160); }\n"
        out += "#search, #ignorecase, #matched { text-anchor:end; }\n#search, #ignorecase { opacity:0.1; cursor:pointer; }\n"
        out += "#search:hover, #search.show, #ignorecase:hover, #ignorecase.show { opacity:1; }\n#unzoom { cursor:pointer; }\n"
        out += "#frames > *:hover { stroke:black; stroke-width:0.5; cursor:pointer; }\n"
        out += ".hide { display:none; }\n.parent { opacity:0.5; }\n</style>\n"
        out += "<script type=\"text/ecmascript\"><![CDATA[\n"
        out += "var fg_nametype = \(jsString(options.nameType));\n"
        out += "var fg_fontsize = \(FoldedStacks.format(options.fontSize));\n"
        out += "var fg_fontwidth = \(options.fontWidth);\n"
        out += "var fg_inverted = \(options.inverted);\n"
        out += "var fg_searchcolor = \(jsString(options.searchColor));\n"
        out += FlameGraphScript.source
        out += "]]></script>\n"
        let width = Double(options.width), fs = options.fontSize
        let detailsY = options.inverted ? geometry.ypad1 - fs / 2 - 4 : geometry.height - geometry.ypad2 / 2
        out += "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"\(fixed(geometry.height, 0))\" fill=\"url(#background)\"/>\n"
        out += "<text id=\"title\" x=\"50%\" y=\"\(fixed(fs * 2, 2))\">\(xmlEscaped(options.title))</text>\n"
        if let subtitle = options.subtitle {
            out += "<text id=\"subtitle\" x=\"50%\" y=\"\(fixed(fs * 4, 2))\">\(xmlEscaped(subtitle))</text>\n"
        }
        out += "<text id=\"details\" x=\"\(fixed(Self.xpad, 0))\" y=\"\(fixed(detailsY, 2))\"> </text>\n"
        out += "<text id=\"unzoom\" class=\"hide\" x=\"\(fixed(Self.xpad, 0))\" y=\"\(fixed(fs * 2, 2))\">Reset Zoom</text>\n"
        // Search, and right of it flamegraph.pl's "ic" toggle (search ignoring case).
        out += "<text id=\"search\" x=\"\(fixed(width - Self.xpad - 2 * fs, 0))\" y=\"\(fixed(fs * 2, 2))\">Search</text>\n"
        out += "<text id=\"ignorecase\" x=\"\(fixed(width - Self.xpad, 0))\" y=\"\(fixed(fs * 2, 2))\">ic</text>\n"
        out += "<text id=\"matched\" x=\"\(fixed(width - Self.xpad, 0))\" y=\"\(fixed(detailsY, 2))\"> </text>\n"
        out += "<svg id=\"frames\" x=\"\(fixed(Self.xpad, 0))\" width=\"\(fixed(width - 2 * Self.xpad, 0))\" "
        out += "total_samples=\"\(FoldedStacks.format(total))\">\n"
    }

    /// A font family list for CSS: quoted unless a generic family, with a generic fallback.
    private func cssFont(_ family: String) -> String {
        let generic: Set<String> = ["serif", "sans-serif", "monospace", "cursive", "fantasy", "system-ui"]
        if generic.contains(family) { return family }
        let quoted = "'" + family.replacingOccurrences("\\", with: "\\\\").replacingOccurrences("'", with: "\\'") + "'"
        return xmlEscaped(quoted) + ", sans-serif"
    }

    /// A JavaScript string literal (safe inside CDATA).
    private func jsString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            // Markup characters, and line terminators a JavaScript string literal may not hold raw.
            case "<", ">", "&", "]", "\r", "\u{2028}", "\u{2029}":
                out += "\\u" + String(scalar.value, radix: 16).leftPadded(to: 4)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
