import Dispatch

/// A window of a tiny UI framework (a stand-in for a SwiftPM dependency an app links): it lays out message rows
/// in layout passes scheduled on the main queue. A pass whose rows change the content's height invalidates the
/// layout, and the window lays out again at once, within the same main-queue turn, until the height settles or
/// its time budget is spent. The rows never settle: content taller than the window's threshold gets the compact
/// style (narrow insets, wider text), which makes it shorter than that; shorter content gets the regular style,
/// which makes it taller. The main thread stays busy entirely inside ChatUI.
@MainActor public final class Window {
    /// The window's title.
    public let title: String
    private var rows: [MessageRow]
    private var contentHeight = 0.0
    /// The content height above which rows get the compact style: halfway between the two styles' heights.
    private let compactThreshold: Double
    /// Layout passes run so far.
    public private(set) var passes = 0

    /// A window showing `rowCount` message rows of deterministic text.
    public init(title: String, rowCount: Int) {
        self.title = title
        let rows = (0..<max(1, rowCount)).map { MessageRow(seed: UInt64($0) &+ 1) }
        let regular = rows.reduce(0.0) { $0 + 8 + TextLayout.height(of: $1.text, width: Self.regularWidth) }
        let compact = rows.reduce(0.0) { $0 + 8 + TextLayout.height(of: $1.text, width: Self.compactWidth) }
        compactThreshold = (regular + compact) / 2
        self.rows = rows
    }

    /// The text width of the regular style (wide insets) and of the compact style.
    static let regularWidth = 390.0 - 64, compactWidth = 390.0 - 8

    /// Shows the window: schedules its first layout on the next main-queue turn. Layout goes on for at most
    /// `layoutMilliseconds` (the rows never settle); then `finished` is scheduled on the main queue.
    public func show(layoutMilliseconds: Int, finished: @escaping @MainActor () -> Void) {
        let deadline = DispatchTime.now() + .milliseconds(layoutMilliseconds)
        DispatchQueue.main.async { MainActor.assumeIsolated { self.layoutPass(until: deadline, finished: finished) } }
    }

    /// Lays out the rows, again and again while the content's height keeps changing and time is left.
    @inline(never)
    func layoutPass(until deadline: DispatchTime, finished: @escaping @MainActor () -> Void) {
        var changed = true
        while changed && DispatchTime.now() < deadline {
            passes += 1
            changed = layoutRows()
        }
        DispatchQueue.main.async { MainActor.assumeIsolated { finished() } }
    }

    /// One pass over every row at the current content width; true when the content's height changed.
    @inline(never)
    func layoutRows() -> Bool {
        let width = contentHeight > compactThreshold ? Self.compactWidth : Self.regularWidth
        var height = 0.0
        for index in rows.indices {
            height += rows[index].measure(width: width)
        }
        defer { contentHeight = height }
        return height != contentHeight
    }
}

/// One message row: its text.
struct MessageRow {
    var text: String
    /// The height of the latest layout.
    private(set) var height = 0.0

    /// A row of 20 to 80 words from a small vocabulary, chosen from `seed`.
    init(seed: UInt64) {
        let vocabulary = ["layout", "message", "ok", "scrolling", "a", "conversation", "typing", "read", "sent",
                          "attachment", "🙂", "reply", "the", "notification", "delivered"]
        var state = seed &* 0x9E37_79B9_7F4A_7C15
        func next(_ range: UInt64) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % range)
        }
        text = (0..<(20 + next(61))).map { _ in vocabulary[next(UInt64(vocabulary.count))] }.joined(separator: " ")
    }

    /// Lays the row out at `width`, returning its height.
    @inline(never)
    mutating func measure(width: Double) -> Double {
        height = 8 + TextLayout.height(of: text, width: width)
        return height
    }
}

/// Text layout of the tiny UI framework: words broken into lines of a given width, each character's advance
/// looked up by its Unicode scalar (the costly part of a real text layout).
enum TextLayout {
    /// The line height, in points.
    static let lineHeight = 17.0

    /// The height of `text` broken into lines of `width` points.
    @inline(never)
    static func height(of text: String, width: Double) -> Double {
        var lines = 1.0, x = 0.0
        for word in text.split(separator: " ") {
            let wordWidth = word.unicodeScalars.reduce(0.0) { $0 + advance(of: $1) }
            if x > 0 && x + wordWidth > width {
                lines += 1
                x = 0
            }
            x += wordWidth + advance(of: " ")
        }
        return lines * lineHeight
    }

    /// The advance of one character: narrow and wide Latin letters, digits, emoji.
    @inline(never)
    static func advance(of scalar: Unicode.Scalar) -> Double {
        switch scalar.value {
        case 0x20: return 4
        case 0x69, 0x6C, 0x74, 0x66, 0x6A: return 3.5  // i l t f j
        case 0x6D, 0x77: return 11  // m w
        case 0x30...0x39: return 7.5
        case 0x1F000...: return 17
        default: return 7
        }
    }
}
