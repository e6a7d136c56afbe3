/// The one JUnit XML writer of the codebase: `bisect --junit` (StallBisect) and `report --fail-on ... --junit`
/// (StallAnalysis) both write their test cases through it, escaped by ``XMLEscaping``.
public enum JUnitXML {
    /// One test case.
    public struct Case: Sendable, Equatable {
        /// The case's `classname` (`stallprof.bisect`, `stallprof.report`).
        public var className: String
        /// The case's `name`.
        public var name: String
        /// A failing case's `message` attribute and text (the text may be empty); nil for a case that passed.
        public var failure: (message: String, text: String)?
        /// `system-out` text; nil for none.
        public var output: String?

        /// Creates a case.
        public init(className: String, name: String, failure: (message: String, text: String)? = nil, output: String? = nil) {
            self.className = className
            self.name = name
            self.failure = failure
            self.output = output
        }

        public static func == (a: Case, b: Case) -> Bool {
            a.className == b.className && a.name == b.name && a.output == b.output
                && a.failure?.message == b.failure?.message && a.failure?.text == b.failure?.text
        }
    }

    /// A document of one test suite named `suite` holding `cases`, ending with a newline.
    public static func document(suite: String, cases: [Case]) -> String {
        let x = { (text: String) in XMLEscaping.escaped(text) }
        let lines = cases.map { c -> String in
            var line = "    <testcase classname=\"\(x(c.className))\" name=\"\(x(c.name))\">"
            if let failure = c.failure {
                line += failure.text.isEmpty
                    ? "<failure message=\"\(x(failure.message))\"/>"
                    : "<failure message=\"\(x(failure.message))\">\(x(failure.text))</failure>"
            }
            if let output = c.output { line += "<system-out>\(x(output))</system-out>" }
            return line + "</testcase>"
        }
        let failures = cases.filter { $0.failure != nil }.count
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <testsuites>
              <testsuite name="\(x(suite))" tests="\(cases.count)" failures="\(failures)">
            \(lines.joined(separator: "\n"))
              </testsuite>
            </testsuites>

            """
    }
}
