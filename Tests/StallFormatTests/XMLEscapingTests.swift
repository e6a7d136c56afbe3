import Foundation
import StallFormat
import Testing

/// The one XML escaper: markup characters become entities, characters XML 1.0 forbids become U+FFFD.
@Suite struct XMLEscapingTests {
    /// Texts no XML writer may pass through raw: NUL, C0 controls, U+FFFE, U+FFFF, markup, quotes.
    static let hostile = [
        "nul\u{0}here", "bell\u{7}esc\u{1B}", "nonchars \u{FFFE}\u{FFFF}", #"<tag attr="x">&amp;'q'</tag>"#,
        "]]> and --> and <!--", "tab\tline\nreturn\r", "émoji 👍🏽 \u{FEFF}", "\u{1}\u{1F}\u{8}", "",
    ]

    @Test func escapesMarkupAndReplacesForbiddenCharacters() {
        #expect(XMLEscaping.escaped(#"a<b>&"c"'d'"#) == "a&lt;b&gt;&amp;&quot;c&quot;&apos;d&apos;")
        #expect(XMLEscaping.escaped("x\u{0}y\u{FFFF}z\u{FFFE}") == "x\u{FFFD}y\u{FFFD}z\u{FFFD}")
        #expect(XMLEscaping.escaped("tab\tline\nret\r") == "tab\tline\nret\r")
        #expect(XMLEscaping.escaped("plain été 👍") == "plain été 👍")
        for text in Self.hostile {
            let out = XMLEscaping.escaped(text)
            #expect(out.unicodeScalars.allSatisfy(XMLEscaping.isAllowed), "\(out.debugDescription)")
            #expect(!out.contains("<") && !out.contains(">") && !out.contains("\""), "\(out.debugDescription)")
        }
    }

    @Test func skipsTheCopyOnlyWhenNoByteCouldNeedIt() {
        for text in Self.hostile + ["plain", "ascii only 123", "\u{FFFD}"] {
            let needs = text.utf8.contains(where: XMLEscaping.mayNeedEscaping)
            if !needs { #expect(XMLEscaping.escaped(text) == text) }
            if XMLEscaping.escaped(text) != text { #expect(needs, "\(text.debugDescription)") }
        }
    }

    @Test(.enabled(if: XMLCheck.python != nil, "python3 not installed"))
    func escapedTextIsWellFormedForPython() throws {
        var document = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<root>\n"
        for text in Self.hostile {
            let escaped = XMLEscaping.escaped(text)
            document += "<item a=\"\(escaped)\" b='\(escaped)'>\(escaped)</item>\n"
        }
        document += "</root>\n"
        let parsed = try XMLCheck.parse(document)
        #expect(parsed.status == 0, "\(parsed.output)")
        // Each item's text and attributes read back as the input with forbidden characters replaced.
        #expect(parsed.output.split(separator: "\n").count == Self.hostile.count, "\(parsed.output)")
    }
}

/// Parses XML with python3's xml.etree (an independent parser).
enum XMLCheck {
    /// python3, when installed.
    static let python: String? = ["/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// The parser's exit status and output: one line per `item` element (text and attributes, as Python reprs).
    static func parse(_ document: String) throws -> (status: Int32, output: String) {
        let path = NSTemporaryDirectory() + "stallprof-xml-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).xml"
        try Data(document.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python!)
        process.arguments = [
            "-c",
            "import sys, xml.etree.ElementTree as E\n"
                + "for e in E.parse(sys.argv[1]).getroot().iter('item'): print(repr((e.text, e.attrib)))",
            path,
        ]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }
}
