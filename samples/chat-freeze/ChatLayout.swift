/// One message of the list.
struct Message {
    var author: String
    var text: String
}

/// The message list's layout: row heights, the scroll offset, and which rows are materialized.
///
/// With `lazy-stack`, only rows whose top lies inside the viewport are materialized (measured); every other
/// row counts at ``estimatedRowHeight`` (the average measured height of the rows seen so far) until it scrolls
/// into view, and loses its measurement when it leaves.
/// Without it (an eager stack), every row is measured on every pass.
///
/// With `autoscroll`, each pass re-anchors the list so that its bottom is at the bottom of the viewport. While
/// a reply streams, its row is pinned (materialized whatever its position) so the reader can follow it; when it
/// ends, the pin is released.
///
/// The freeze, when both are enabled and the finished reply is taller than the viewport: anchored at the bottom,
/// the reply's top lies inside the viewport only while it counts at its estimated height; once materialized it
/// is measured at its real height, the content grows, the anchor moves down, the reply's top leaves the
/// viewport, the row is evicted and counts at its estimate again, the content shrinks, the anchor moves up, and
/// so on: a layout feedback loop with no data changing.
final class ChatLayout {
    struct Settings {
        var lazyStack = true
        var autoscroll = true
        var markdownCache: MarkdownCache? = MarkdownCache()
        var timestamps = true
        var avatars = true
    }

    /// The height an unmeasured row counts at: the average of the rows measured by ``estimate(from:)``.
    private(set) var estimatedRowHeight = 44.0
    let viewportHeight = 600.0
    let columns = 60
    let settings: Settings
    private(set) var offset = 0.0
    private(set) var passes = 0
    /// The row being streamed into: materialized whatever its position.
    var pinnedRow: Int?
    private var measured: [Int: Double] = [:]

    init(settings: Settings) { self.settings = settings }

    /// Sets the estimate to the average measured height of `messages`.
    func estimate(from messages: [Message]) {
        guard !messages.isEmpty else { return }
        estimatedRowHeight = messages.map(measure).reduce(0, +) / Double(messages.count)
    }

    /// Lays out until the layout is stable: each pass measures what it must and re-anchors; a pass that moves
    /// the anchor asks for another.
    func layout(_ messages: [Message]) {
        while pass(messages) {}
    }

    /// One layout pass; true when it moved the anchor (another pass is needed). Never inlined, so that it is
    /// its own frame in debug and release builds: the report names it as the loop's driver.
    @inline(never)
    func pass(_ messages: [Message]) -> Bool {
        passes += 1
        var tops: [Double] = []
        var y = 0.0
        for index in messages.indices {
            tops.append(y)
            let materialized = !settings.lazyStack || index == pinnedRow
                || (tops[index] >= offset && tops[index] < offset + viewportHeight)
            if materialized {
                measured[index] = measure(messages[index])
            } else {
                measured[index] = nil
            }
            y += measured[index] ?? estimatedRowHeight
        }
        guard settings.autoscroll else { return false }
        let anchored = max(0, y - viewportHeight)
        defer { offset = anchored }
        return abs(anchored - offset) > 0.5
    }

    private func measure(_ message: Message) -> Double {
        let blocks = settings.markdownCache?.blocks(for: message.text) ?? Markdown.parse(message.text)
        let chrome = (settings.timestamps ? 14.0 : 0) + (settings.avatars ? 8.0 : 0) + 16
        return Markdown.height(of: blocks, columns: columns) + chrome
    }
}
