/// The frames of the SVG, written as bytes straight from the layout's arena: a real perf profile draws tens of
/// thousands of frames, and a String per name, number and tooltip was most of `stallprof flamegraph`'s time.
extension SVGFlameGraph {
    /// Appends one `<g>` per frame of `layout` (title, rect, and a label when the name fits) to `out`; a frame
    /// whose name has a place in `places` says it in its title (``OrderedStacks/places``).
    func writeFrames(_ out: inout SVGBytes, _ layout: FrameLayout, geometry: Geometry, framesWidth: Double,
                     counts: CountText, places: [String: String] = [:]) {
        let colors = FrameColors(palette: options.palette, weightedHash: options.hash)
        let total = layout.total
        let charWidth = options.fontSize * options.fontWidth
        let labelOffset = 300 / framesWidth
        let labelDrop = Double(options.frameHeight - 1) / 2 + 3
        layout.arena.withUnsafeBufferPointer { arena in
            for frame in layout.frames {
                let raw = UnsafeBufferPointer(rebasing: arena[frame.nameBytes])
                let x1 = frame.start / total * 100
                let widthPct = frame.width / total * 100
                let y = geometry.y(depth: frame.depth)
                let dashes = (raw.count == 1 || raw.count == 2) && raw.allSatisfy { $0 == UInt8(ascii: "-") }
                let plain: RGB?
                if let delta = frame.delta, !dashes {
                    plain = FrameColors.differential(delta: options.negate ? -delta : delta, total: total)
                } else if !options.paletteMap.isEmpty, !dashes, frame.depth > 0,
                    let given = options.paletteMap[String(decoding: raw, as: UTF8.self)].flatMap({ RGB(css: Substring($0)) })
                {
                    plain = given
                } else {
                    plain = colors.color(forBytes: raw)
                }
                // The name as a String only when the colour or the annotation needs its characters.
                let name: Substring? =
                    raw.last == UInt8(ascii: "]") || plain == nil ? FrameColors.deannotated(layout.name(of: frame)) : nil
                let fill = plain ?? colors.color(for: layout.name(of: frame))
                out.append("<g><title>" as StaticString)
                let place = places.isEmpty || frame.depth == 0 ? nil : places[String(decoding: raw, as: UTF8.self)]
                writeTooltip(&out, frame, raw: raw, name: name, place: place, total: total, counts: counts)
                out.append("</title><rect x=\"" as StaticString)
                out.append(fixed: x1, 4)
                out.append("%\" y=\"" as StaticString)
                out.append(int: y)
                out.append("\" width=\"" as StaticString)
                out.append(fixed: widthPct, 4)
                out.append("%\" height=\"" as StaticString)
                out.append(int: options.frameHeight - 1)
                out.append("\" fill=\"" as StaticString)
                out.append(color: fill)
                out.append("\" fg:x=\"" as StaticString)
                out.append(count: frame.start)
                out.append("\" fg:w=\"" as StaticString)
                if let exact = frame.exactWidth { out.append(unsigned: exact) } else { out.append(count: frame.width) }
                out.append("\"/>" as StaticString)
                let fit = Int((widthPct / 100 * framesWidth - 3) / charWidth)
                if fit >= 3 {
                    out.append("<text x=\"" as StaticString)
                    out.append(fixed: x1 + labelOffset, 4)
                    out.append("%\" y=\"" as StaticString)
                    out.append(fixed: Double(y) + labelDrop, 2)
                    out.append("\">" as StaticString)
                    if frame.depth == 0 {
                        writeLabel(&out, "all", fit: fit)
                    } else if let name {
                        writeLabel(&out, String(name), fit: fit)
                    } else if raw.count < fit {  // never more characters than bytes
                        out.append(escaped: raw)
                    } else {
                        writeLabel(&out, String(decoding: raw, as: UTF8.self), fit: fit)
                    }
                    out.append("</text>" as StaticString)
                }
                out.append("</g>\n" as StaticString)
            }
        }
    }

    /// `name (N samples, P%)` (`name (1.23 ms, P%)` for time), `all (N samples, 100%)` for the root, and `; +D%`
    /// for frames of differential stacks (`; -D%` when it shrank), escaped for XML. With a place, `name at
    /// Workloads.swift:71 (N samples, P%)`: before the counts, so the script's search and details take it as part
    /// of the name (they drop only the last parenthesis).
    private func writeTooltip(_ out: inout SVGBytes, _ frame: LaidOutFrame, raw: UnsafeBufferPointer<UInt8>,
                              name: Substring?, place: String?, total: Double, counts: CountText)
    {
        if frame.depth == 0 {
            out.append("all (" as StaticString)
            counts.write(frame.width, exact: frame.exactWidth, to: &out)
            out.append(", 100%)" as StaticString)
            return
        }
        if let name {
            var copy = String(name)
            copy.withUTF8 { out.append(escaped: $0) }
        } else {
            out.append(escaped: raw)
        }
        if var place {
            out.append(" at " as StaticString)
            place.withUTF8 { out.append(escaped: $0) }
        }
        out.append(" (" as StaticString)
        counts.write(frame.width, exact: frame.exactWidth, to: &out)
        out.append(", " as StaticString)
        // Scaled by --factor, the share is of the scaled count as printed (flamegraph.pl's and inferno's).
        let factor = options.factor
        out.append(fixed: factor == 1 ? frame.width / total * 100 : (frame.width * factor).rounded() / (total * factor) * 100, 2)
        out.append("%" as StaticString)
        if var delta = frame.delta {
            if options.negate { delta = -delta }
            out.append(delta > 0 ? "; +" as StaticString : "; " as StaticString)
            out.append(fixed: delta / total * 100, 2)
            out.append("%" as StaticString)
        }
        out.append(")" as StaticString)
    }

    /// The label of a frame `fit` characters wide: the name, or its first `fit - 2` characters and `..`.
    private func writeLabel(_ out: inout SVGBytes, _ shown: String, fit: Int) {
        var label = shown.count < fit ? shown : String(shown.prefix(fit - 2)) + ".."
        label.withUTF8 { out.append(escaped: $0) }
    }
}

/// How tooltips print a count: grouped digits and what a count is called (`1,234 samples`, `5,000 cycles`), or
/// a duration (`1.23 ms`) when the profile's counts are time and no ``FlameGraphOptions/countName`` is given.
struct CountText {
    /// ` name`, escaped, after the digits; unused for time.
    private let suffix: [UInt8]
    /// The time unit, when counts print as durations.
    private let time: CountUnit?
    /// ``FlameGraphOptions/factor``.
    private let factor: Double

    /// The text for `options` and a profile counted in `unit`: the options' `countName` first, else the unit's.
    init(_ options: FlameGraphOptions, _ unit: CountUnit?) {
        let name: String?
        if let given = options.countName { name = given } else if let unit { name = unit.countName } else { name = "samples" }
        time = name == nil ? unit : nil
        suffix = Array((" " + xmlEscaped(name ?? "")).utf8)
        factor = options.factor
    }

    /// Appends `count` (exactly `exact` when given) as this text prints it.
    func write(_ count: Double, exact: UInt64? = nil, to out: inout SVGBytes) {
        let scaled = factor == 1 ? count : (count * factor).rounded()  // flamegraph.pl: sprintf "%.0f"
        if let time, let duration = time.duration(scaled) { return out.append(duration) }
        if let exact, factor == 1 { out.append(groupedWhole: exact) } else { out.append(grouped: scaled) }
        out.append(bytes: suffix)
    }
}
