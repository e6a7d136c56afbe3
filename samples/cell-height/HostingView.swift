import Dispatch

/// A text cell of the list.
struct Cell {
    /// The words of the cell's text, as widths in points.
    var wordWidths: [Double]
}

/// Measures cells: lays out their words into lines of a given width, one glyph at a time (the expensive part of
/// a real text layout). With a cache, each (cell, width) is measured once.
@MainActor final class CellMeasurer {
    private var cache: [Int: [Double: Double]]?
    /// Cells measured without the cache (for the summary line).
    private(set) var measured = 0

    init(caching: Bool) { cache = caching ? [:] : nil }

    /// The height of cell `index` laid out at `width`.
    @inline(never)
    func height(of cell: Cell, index: Int, width: Double) -> Double {
        if let hit = cache?[index]?[width] { return hit }
        measured += 1
        let lines = Self.lineCount(cell.wordWidths, width: width)
        let height = 8 + 17 * Double(lines)
        cache?[index, default: [:]][width] = height
        return height
    }

    /// Greedy line breaking, glyph by glyph (each word is four to nine glyphs).
    @inline(never)
    static func lineCount(_ words: [Double], width: Double) -> Int {
        var lines = 1
        var x = 0.0
        for word in words {
            var advance = 0.0
            var glyph = 0
            while advance < word {  // kerning and shaping stand-in
                advance += 6.5 + Double(glyph % 3) * 0.25
                glyph += 1
            }
            if x > 0 && x + advance > width {
                lines += 1
                x = 0
            }
            x += advance + 4
        }
        return lines
    }
}

/// A hosting view whose height is its content's: each layout pass measures every cell at the content width
/// and, when the height changed, schedules another pass on the main queue (as a UI toolkit invalidates layout
/// after a size change). Each pass is one short main-queue turn, so the main queue keeps answering.
///
/// With `selfSizing`, the cells size themselves against the hosting view's current height: a view taller than
/// ``compactHeight`` gets the compact style (wider text, no side inset), which makes it shorter than that; a
/// shorter one gets the regular style, which makes it taller. The height alternates forever. Without it the width
/// is fixed and the height settles after the first pass.
@MainActor final class HostingView {
    let cells: [Cell]
    let measurer: CellMeasurer
    let selfSizing: Bool
    let bounds = 390.0
    /// The height at which the cells switch to the compact style.
    let compactHeight: Double
    private(set) var height = 0.0
    private(set) var passes = 0
    /// True when the latest pass did not change the height.
    private(set) var settled = false

    init(cells: [Cell], measurer: CellMeasurer, selfSizing: Bool) {
        self.cells = cells
        self.measurer = measurer
        self.selfSizing = selfSizing
        let regular = cells.enumerated().reduce(0.0) { $0 + measurer.height(of: $1.element, index: $1.offset, width: 390 - 64) }
        let compact = cells.enumerated().reduce(0.0) { $0 + measurer.height(of: $1.element, index: $1.offset, width: 390 - 8) }
        compactHeight = (regular + compact) / 2
    }

    /// The width the cells' text is laid out at for the current height.
    var contentWidth: Double {
        guard selfSizing else { return bounds - 64 }
        return height > compactHeight ? bounds - 8 : bounds - 64
    }

    /// One layout pass: measures every cell; schedules the next pass when the height changed.
    @inline(never)
    func layoutPass() {
        passes += 1
        let width = contentWidth
        var total = 0.0
        for (index, cell) in cells.enumerated() {
            total += measurer.height(of: cell, index: index, width: width)
        }
        settled = total == height
        guard !settled else { return }
        height = total
        setNeedsLayout()
    }

    /// One very slow pass (a stall: the main queue does not answer for `milliseconds`), measuring over and over.
    @inline(never)
    func slowPass(milliseconds: Int) {
        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(milliseconds)
        var lines = 0
        while clock.now < deadline { lines &+= CellMeasurer.lineCount(cells[lines % cells.count].wordWidths, width: 300) }
        if lines == -1 { print(lines) }
    }

    /// Schedules a layout pass on the next main-queue turn.
    func setNeedsLayout() {
        DispatchQueue.main.async { MainActor.assumeIsolated { self.layoutPass() } }
    }
}
