import Foundation
import FoundationXML

/// A flame graph SVG read back with an XML parser (so escaping mistakes fail the parse): its frames and texts.
public struct SVGFrames {
    /// One `<g>` of `#frames`.
    public struct Frame: Equatable {
        public var name: String
        public var title: String
        public var x: Double
        public var width: Double
        public var y: Int
        public var fill: String
        public var label: String?
        public var depth = 0
    }

    public var frames: [Frame] = []
    public var texts: [String: String] = [:]
    public var comments: [String] = []
    public var total = 0.0

    /// Parses `svg`; nil when it is not well-formed XML.
    public init?(_ svg: String) {
        let delegate = Delegate()
        let parser = XMLParser(data: Data(svg.utf8))
        parser.delegate = delegate
        guard parser.parse() else { return nil }
        frames = delegate.frames
        texts = delegate.texts
        comments = delegate.comments
        total = delegate.total
        let ys = Set(frames.map(\.y)).sorted()
        let rootY = frames.first { $0.name == "all" }?.y ?? 0
        let inverted = ys.count > 1 && rootY == ys.first
        for index in frames.indices {
            let rank = ys.firstIndex(of: frames[index].y)!
            frames[index].depth = inverted ? rank : ys.count - 1 - rank
        }
    }

    /// (name, x, width, depth) of every frame, sorted: what conformance compares.
    public var structure: [String] {
        frames.map { "\($0.name)@\($0.depth) \($0.x)+\($0.width)" }.sorted()
    }

    /// The frame named `name` (the first if several).
    public func frame(_ name: String) -> Frame? { frames.first { $0.name == name } }

    private final class Delegate: NSObject, XMLParserDelegate {
        var frames: [Frame] = []
        var texts: [String: String] = [:]
        var comments: [String] = []
        var total = 0.0
        private var inFrames = false
        private var current: Frame?
        private var textID: String?
        private var buffer = ""
        private var inTitle = false
        private var inLabel = false

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            switch name {
            case "svg" where attributes["id"] == "frames":
                inFrames = true
                total = Double(attributes["total_samples"] ?? "") ?? 0
            case "g" where inFrames:
                current = Frame(name: "", title: "", x: 0, width: 0, y: 0, fill: "")
            case "title" where current != nil:
                inTitle = true
                buffer = ""
            case "rect" where current != nil:
                current!.x = Double(attributes["fg:x"] ?? "") ?? -1
                current!.width = Double(attributes["fg:w"] ?? "") ?? -1
                current!.y = Int(attributes["y"] ?? "") ?? -1
                current!.fill = attributes["fill"] ?? ""
            case "text":
                buffer = ""
                if current != nil { inLabel = true } else { textID = attributes["id"] }
            default: break
            }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) { buffer += string }

        func parser(_ parser: XMLParser, foundComment comment: String) { comments.append(comment) }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            switch name {
            case "title" where inTitle:
                inTitle = false
                current!.title = buffer
                if let open = buffer.range(of: " (", options: .backwards) {
                    current!.name = String(buffer[..<open.lowerBound])
                }
            case "text":
                if inLabel { current!.label = buffer; inLabel = false }
                if let id = textID { texts[id] = buffer; textID = nil }
            case "g" where current != nil:
                frames.append(current!)
                current = nil
            default: break
            }
        }
    }
}
