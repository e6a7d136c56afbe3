/// A tiny Markdown layout: enough to give a message a height that depends on its text, at a cost that grows
/// with its length. Paragraphs wrap at the column width; headings, list items and code lines take one line
/// each plus spacing.
struct MarkdownBlock: Equatable {
    enum Kind { case paragraph, heading, listItem, code }
    var kind: Kind
    var text: Substring
}

enum Markdown {
    /// Splits `text` into blocks.
    static func parse(_ text: String) -> [MarkdownBlock] {
        var blocks: [MarkdownBlock] = []
        var inCode = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                inCode.toggle()
                continue
            }
            if inCode {
                blocks.append(MarkdownBlock(kind: .code, text: line))
            } else if line.hasPrefix("#") {
                blocks.append(MarkdownBlock(kind: .heading, text: line.drop { $0 == "#" || $0 == " " }))
            } else if line.hasPrefix("- ") {
                blocks.append(MarkdownBlock(kind: .listItem, text: line.dropFirst(2)))
            } else if !line.isEmpty {
                blocks.append(MarkdownBlock(kind: .paragraph, text: line))
            }
        }
        return blocks
    }

    /// The height in points of `blocks` laid out `columns` characters wide.
    static func height(of blocks: [MarkdownBlock], columns: Int) -> Double {
        var height = 0.0
        for block in blocks {
            switch block.kind {
            case .heading: height += 28 + 8
            case .code: height += 16
            case .listItem, .paragraph:
                height += Double(wrappedLineCount(block.text, columns: block.kind == .listItem ? columns - 2 : columns)) * 20
                height += block.kind == .paragraph ? 10 : 2
            }
        }
        return height
    }

    /// Lines needed to wrap `text` at `columns` characters, breaking at spaces.
    static func wrappedLineCount(_ text: Substring, columns: Int) -> Int {
        var lines = 1
        var used = 0
        for word in text.split(separator: " ") {
            if used > 0 && used + 1 + word.count > columns {
                lines += 1
                used = word.count
            } else {
                used += (used > 0 ? 1 : 0) + word.count
            }
        }
        return lines
    }
}

/// Parsed messages by text, so that measuring a message again does not parse it again (flag `markdown-cache`).
final class MarkdownCache {
    private var blocks: [String: [MarkdownBlock]] = [:]

    func blocks(for text: String) -> [MarkdownBlock] {
        if let cached = blocks[text] { return cached }
        let parsed = Markdown.parse(text)
        blocks[text] = parsed
        return parsed
    }
}
