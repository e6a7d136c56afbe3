/// The long Markdown reply the app streams (about 2,500 words), built deterministically.
enum Reply {
    static let topics = [
        "layout", "estimation", "anchoring", "rendering", "caching", "scrolling", "streaming", "measurement",
    ]
    static let filler = """
        The list keeps every message in order and measures each row from its text so that the scroll position \
        stays where the reader expects it while new words arrive from the network in small pieces
        """.split(separator: " ")

    /// The reply's words, grouped into Markdown blocks: headings, paragraphs, list items and code.
    static func text(words target: Int = 2_500) -> String {
        var lines: [String] = []
        var words = 0
        var section = 0
        while words < target {
            let topic = topics[section % topics.count]
            lines.append("## \(section + 1). On \(topic)")
            for paragraph in 0..<3 {
                let count = 40 + (section * 7 + paragraph * 13) % 30
                lines.append((0..<count).map { String(filler[($0 + paragraph + section) % filler.count]) }.joined(separator: " "))
                lines.append("")
                words += count
            }
            for item in 0..<4 {
                lines.append("- \(topic) item \(item + 1): " + filler.prefix(6 + item).joined(separator: " "))
                words += 9 + item
            }
            lines += ["```", "let \(topic) = measure(row: \(section), width: columns)", "```", ""]
            words += 6
            section += 1
        }
        return lines.joined(separator: "\n")
    }
}
