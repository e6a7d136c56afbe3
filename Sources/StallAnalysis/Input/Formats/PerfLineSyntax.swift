/// The shapes of `perf script` lines, matched on bytes exactly as stackcollapse-perf.pl's regular expressions
/// match them (backtracking included), so that odd lines fold the same way.
enum PerfLineSyntax {
    typealias Bytes = UnsafeBufferPointer<UInt8>

    /// Perl's `\s`: space, tab, newline, vertical tab, form feed, carriage return.
    @inline(__always) static func isSpace(_ byte: UInt8) -> Bool { byte == 32 || (byte >= 9 && byte <= 13) }
    /// Perl's `\d`.
    @inline(__always) static func isDigit(_ byte: UInt8) -> Bool { byte &- 48 < 10 }
    /// Perl's `\w` on ASCII.
    @inline(__always) static func isWord(_ byte: UInt8) -> Bool {
        isDigit(byte) || (byte | 0x20) &- 97 < 26 || byte == 95
    }

    /// The fields of an event line per `^(\S.+?)\s+(\d+)\/*(\d+)*\s+`: the command name, then one or two numbers.
    struct EventFields {
        /// The command (`$1`).
        var comm: Range<Int>
        /// The first number (`$2`).
        var first: Range<Int>
        /// The number after a slash (`$3`), if any.
        var second: Range<Int>?
    }

    /// The sample's time in nanoseconds: the first word after `from` that reads `SECONDS.FRACTION:` (perf script's
    /// `100.000001:`, or nine digits with `--ns`); nil when the line has none (`perf script -F` without `time`) or
    /// it is past 9e9 seconds (viewers keep nanoseconds in signed 64 bits).
    static func timestamp(_ line: Bytes, from: Int) -> UInt64? {
        var index = from
        let n = line.count
        while index < n {
            while index < n && isSpace(line[index]) { index += 1 }
            let start = index
            while index < n && !isSpace(line[index]) { index += 1 }
            guard index - start >= 4, line[index - 1] == UInt8(ascii: ":") else { continue }
            var seconds: UInt64 = 0, fraction: UInt64 = 0, digits = 0, at = start
            while at < index - 1 && isDigit(line[at]) && seconds < 1 << 40 {
                seconds = seconds * 10 + UInt64(line[at] - 48)
                at += 1
            }
            guard at > start, at < index - 1, line[at] == UInt8(ascii: ".") else { continue }
            at += 1
            while at < index - 1 && isDigit(line[at]) {
                if digits < 9 {
                    fraction = fraction * 10 + UInt64(line[at] - 48)
                    digits += 1
                }
                at += 1
            }
            guard at == index - 1, digits > 0 else { continue }
            guard seconds < 9_000_000_000 else { return nil }
            for _ in digits..<9 { fraction *= 10 }
            return seconds * 1_000_000_000 + fraction
        }
        return nil
    }

    /// Matches the event line regex; nil when the line is not an event line.
    static func eventFields(_ line: Bytes) -> EventFields? {
        let n = line.count
        guard n >= 4, !isSpace(line[0]) else { return nil }
        var e = 2  // `\S.+?`: at least two bytes, as few as possible
        while e < n {
            guard isSpace(line[e]) else {
                e += 1
                continue
            }
            var w = e
            while w < n && isSpace(line[w]) { w += 1 }
            var d = w
            while d < n && isDigit(line[d]) { d += 1 }
            if d > w && d < n {
                if isSpace(line[d]) { return EventFields(comm: 0..<e, first: w..<d, second: nil) }
                if line[d] == UInt8(ascii: "/") {
                    var s = d
                    while s < n && line[s] == UInt8(ascii: "/") { s += 1 }
                    var t = s
                    while t < n && isDigit(line[t]) { t += 1 }
                    if t < n && isSpace(line[t]) {
                        return EventFields(comm: 0..<e, first: w..<d, second: t > s ? s..<t : nil)
                    }
                }
            }
            e = w > e ? w : e + 1  // every start inside one run of spaces fails the same way
        }
        return nil
    }

    /// Matches `:\s*(\d+)*\s+(\S+):\s*$`: the sample period (if written) and the event name that ends the line.
    static func periodAndEvent(_ line: Bytes) -> (period: Range<Int>?, event: Range<Int>)? {
        var end = line.count
        while end > 0 && isSpace(line[end - 1]) { end -= 1 }
        guard end >= 4, line[end - 1] == UInt8(ascii: ":") else { return nil }
        var tokenStart = end - 1
        while tokenStart > 0 && !isSpace(line[tokenStart - 1]) { tokenStart -= 1 }
        guard tokenStart < end - 1 else { return nil }
        var a = tokenStart
        while a > 0 && isSpace(line[a - 1]) { a -= 1 }
        guard a < tokenStart, a > 0 else { return nil }
        var b = a
        while b > 0 && isDigit(line[b - 1]) { b -= 1 }
        if b < a {
            var c = b
            while c > 0 && isSpace(line[c - 1]) { c -= 1 }
            guard c > 0, line[c - 1] == UInt8(ascii: ":") else { return nil }
            return (b..<a, tokenStart..<(end - 1))
        }
        guard line[a - 1] == UInt8(ascii: ":") else { return nil }
        return (nil, tokenStart..<(end - 1))
    }

    /// The fields of a frame line per `^\s*(\w+)\s*(.+) \((\S*)\)`: address, raw function, module.
    struct FrameFields {
        /// The address (`$1`).
        var pc: Range<Int>
        /// The function as printed, offsets included (`$2`).
        var function: Range<Int>
        /// The module between the parentheses (`$3`).
        var module: Range<Int>
    }

    /// Matches the frame line regex; nil when the line is not a frame line.
    static func frameFields(_ line: Bytes) -> FrameFields? {
        let n = line.count
        var i = 0
        while i < n && isSpace(line[i]) { i += 1 }
        guard i < n, isWord(line[i]) else { return nil }
        var p = i
        while p < n && isWord(line[p]) { p += 1 }
        var s = p
        while s < n && isSpace(line[s]) { s += 1 }
        // The rightmost " (" whose run of non-spaces holds a ")": `(.+)` is greedy.
        var close = -1
        var j = n - 1
        var k = -1
        while j > i + 1 {
            let byte = line[j]
            if isSpace(byte) {
                close = -1
            } else if byte == UInt8(ascii: ")") {
                if close < 0 { close = j }
            } else if byte == UInt8(ascii: "("), close > j, line[j - 1] == UInt8(ascii: " ") {
                k = j - 1
                break
            }
            j -= 1
        }
        guard k >= 0 else { return nil }
        if k >= s + 1 { return FrameFields(pc: i..<p, function: s..<k, module: (k + 2)..<close) }
        // `\s*` gives back: the function is the one space before " (" (and `\w+` may give back too).
        guard k - 1 >= i + 1 else { return nil }
        return FrameFields(pc: i..<min(p, k - 1), function: (k - 1)..<k, module: (k + 2)..<close)
    }

    /// An event line that also carries its only frame (`comm pid time: period event:  pc func (module)`), as
    /// inferno reads it: the command, the numbers, the event name, the period (if written) and the frame text.
    struct SingleLineEvent {
        /// The command, trimmed.
        var comm: Range<Int>
        /// The pid, when written as `pid/tid`.
        var pid: Range<Int>?
        /// The tid (or the only number).
        var tid: Range<Int>
        /// The event name, without modifiers.
        var event: Range<Int>
        /// The sample period, if written.
        var period: Range<Int>?
        /// The frame text, trimmed.
        var frame: Range<Int>
    }

    /// Matches an event line with a frame after the event name (inferno's rule).
    static func singleLineEvent(_ line: Bytes) -> SingleLineEvent? {
        let n = line.count
        // The first all-digit word (optionally pid/tid) that follows a space and is followed by a space.
        var index = 0
        var wordStart = -1
        var slash = -1
        var numbers: Range<Int>? = nil
        while index < n {
            let byte = line[index]
            if byte == UInt8(ascii: " ") {
                if wordStart >= 0 && index > wordStart {
                    numbers = wordStart..<index
                    break
                }
                wordStart = index + 1
                slash = -1
            } else if byte == UInt8(ascii: "/") {
                if wordStart >= 0 { slash = index }
            } else if !isDigit(byte) {
                wordStart = -1
            }
            index += 1
        }
        guard let numbers else { return nil }
        var commStart = 0
        var commEnd = numbers.lowerBound - 1
        while commStart < commEnd && isSpace(line[commStart]) { commStart += 1 }
        while commEnd > commStart && isSpace(line[commEnd - 1]) { commEnd -= 1 }
        guard commEnd > commStart else { return nil }
        // After the numbers: "time: [period] event:rest"; the frame follows the first ':' or ' ' of rest.
        var firstColon = numbers.upperBound
        while firstColon < n && line[firstColon] != UInt8(ascii: ":") { firstColon += 1 }
        var secondColon = firstColon + 1
        while secondColon < n && line[secondColon] != UInt8(ascii: ":") { secondColon += 1 }
        guard secondColon < n else { return nil }
        var eventStart = secondColon
        while eventStart > firstColon + 1 && line[eventStart - 1] != UInt8(ascii: " ") { eventStart -= 1 }
        var period: Range<Int>? = nil
        var periodEnd = eventStart
        while periodEnd > firstColon + 1 && line[periodEnd - 1] == UInt8(ascii: " ") { periodEnd -= 1 }
        var periodStart = periodEnd
        while periodStart > firstColon + 1 && isDigit(line[periodStart - 1]) { periodStart -= 1 }
        if periodStart < periodEnd && (periodStart == firstColon + 1 || line[periodStart - 1] == UInt8(ascii: " ")) {
            period = periodStart..<periodEnd
        }
        var frameStart = secondColon + 1
        while frameStart < n && line[frameStart] != UInt8(ascii: ":") && line[frameStart] != UInt8(ascii: " ") {
            frameStart += 1
        }
        frameStart = frameStart < n ? frameStart + 1 : secondColon + 1
        var frameEnd = n
        while frameStart < frameEnd && isSpace(line[frameStart]) { frameStart += 1 }
        while frameEnd > frameStart && isSpace(line[frameEnd - 1]) { frameEnd -= 1 }
        guard frameEnd > frameStart else { return nil }
        let frame = frameStart..<frameEnd
        guard frameFields(Bytes(rebasing: line[frame])) != nil else { return nil }
        let pid = slash >= 0 ? numbers.lowerBound..<slash : nil
        let tid = slash >= 0 ? (slash + 1)..<numbers.upperBound : numbers
        return SingleLineEvent(comm: commStart..<commEnd, pid: pid, tid: tid, event: eventStart..<secondColon,
                               period: period, frame: frame)
    }
}
