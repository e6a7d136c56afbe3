/// App markers drawn over a flame chart: rows above the frames (below them in an icicle chart), an interval as a
/// bar, an instant as a line across the frames, each with its name and a tooltip. They follow click-to-zoom.
extension SVGFlameGraph {
    /// At most this many marker rows; more markers share the rows that free up first.
    static let maxMarkerRows = 8

    /// The markers in rows where no two labels overlap; empty unless a flame chart in time order is drawn.
    func markerRows(total: Double, framesWidth: Double) -> [[ChartMarker]] {
        guard options.flameChart, !options.reverse, total > 0, framesWidth > 0, !markers.isEmpty else { return [] }
        let countsPerPixel = total / framesWidth
        let characterWidth = options.fontSize * options.fontWidth
        var rows: [[ChartMarker]] = [], ends: [Double] = []
        for marker in markers.sorted(by: { ($0.start, $0.end) < ($1.start, $1.end) }) {
            let labelEnd = marker.start + (Double(marker.name.count) * characterWidth + 8) * countsPerPixel
            let extent = max(marker.end, labelEnd)
            if let row = ends.firstIndex(where: { $0 <= marker.start }) {
                rows[row].append(marker)
                ends[row] = extent
            } else if rows.count < Self.maxMarkerRows {
                rows.append([marker])
                ends.append(extent)
            } else {
                let row = ends.indices.min { ends[$0] < ends[$1] } ?? 0
                rows[row].append(marker)
                ends[row] = max(ends[row], extent)
            }
        }
        return rows
    }

    /// Writes `<svg id="markers">` (same position and width as the frames); each marker a `<g>` with `fg:x` and
    /// `fg:w` in counts, which the script re-places on zoom. Marker row `r` is at depth `frameDepth + 2 + r`.
    func writeMarkers(_ out: inout String, rows: [[ChartMarker]], geometry: Geometry, total: Double, frameDepth: Int) {
        guard !rows.isEmpty else { return }
        let framesWidth = Double(options.width) - 2 * Self.xpad
        let height = Double(options.frameHeight - 1)
        out += "<svg id=\"markers\" x=\"\(fixed(Self.xpad, 0))\" width=\"\(fixed(framesWidth, 0))\">\n"
        for (index, row) in rows.enumerated() {
            let y = Double(geometry.y(depth: frameDepth + 2 + index))
            let framesEdge = Double(geometry.y(depth: 0))
            let lineTop = min(y, framesEdge), lineBottom = max(y, framesEdge) + height
            for marker in row {
                let x = marker.start / total * 100, width = max(0, marker.end - marker.start) / total * 100
                out += "<g class=\"marker\" fg:x=\"\(FoldedStacks.format(marker.start))\" "
                out += "fg:w=\"\(FoldedStacks.format(max(0, marker.end - marker.start)))\"><title>"
                out += xmlEscaped(marker.title) + "</title>"
                if marker.kind == .instant || width <= 0 {
                    out += "<line x1=\"\(fixed(x, 4))%\" x2=\"\(fixed(x, 4))%\" y1=\"\(fixed(lineTop, 1))\" "
                    out += "y2=\"\(fixed(lineBottom, 1))\" stroke=\"rgb(200,40,40)\" stroke-width=\"1.5\" "
                    out += "pointer-events=\"none\"/>"
                } else {
                    out += "<rect x=\"\(fixed(x, 4))%\" y=\"\(fixed(y, 1))\" width=\"\(fixed(width, 4))%\" "
                    out += "height=\"\(fixed(height, 1))\" fill=\"rgb(90,130,220)\" fill-opacity=\"0.75\" rx=\"2\"/>"
                }
                // Near the right edge the name ends at the marker instead of starting there.
                let label = x > 85 ? "x=\"\(fixed(x - 300 / framesWidth, 4))%\" text-anchor=\"end\""
                    : "x=\"\(fixed(x + 300 / framesWidth, 4))%\""
                out += "<text \(label) y=\"\(fixed(y + height / 2 + 3, 2))\">" + xmlEscaped(marker.name) + "</text></g>\n"
            }
        }
        out += "</svg>\n"
    }
}
