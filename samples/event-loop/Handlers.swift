import Foundation
import Glibc
import StallSamples

/// The server's request handlers, each `@inline(never)` so that its frame has a name to look for. They run on the
/// loop thread that owns the connection, as a SwiftNIO channel handler does.
enum Handlers {
    /// Serves the requests in `line`: `ping` answers `pong`; `slow-read` reads a slow pipe with a blocking read (the
    /// classic server bug: synchronous I/O on an event loop); `burn` spins the CPU for `burnMs`.
    static func serve(_ line: Substring, on fd: Int32, slowPipe: Int32, burnMs: Int) {
        switch line {
        case "slow-read": slowRead(slowPipe)
        case "burn": burn(milliseconds: burnMs)
        default: break
        }
        reply(fd, line == "ping" ? "pong\n" : "done\n")
    }

    /// A blocking `read` of a pipe that a slow writer fills later: the loop thread sleeps in read(2).
    @inline(never)
    static func slowRead(_ pipe: Int32) {
        var byte: UInt8 = 0
        while read(pipe, &byte, 1) < 0 && errno == EINTR {
            // The watchdog must never make a read fail: said, so that tests see it.
            FileHandle.standardError.write(Data("event-loop: a read failed with EINTR\n".utf8))
        }
    }

    /// Spins the CPU on the loop thread.
    @inline(never)
    static func burn(milliseconds: Int) {
        _ = BusyWork.spin(milliseconds: milliseconds)
    }

    private static func reply(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        _ = send(fd, &bytes, bytes.count, Int32(MSG_NOSIGNAL))
    }
}

/// Reads what came on a connection and serves every complete line.
final class Connection {
    private let fd: Int32, slowPipe: Int32, burnMs: Int
    private var pending: [UInt8] = []

    init(fd: Int32, slowPipe: Int32, burnMs: Int) {
        (self.fd, self.slowPipe, self.burnMs) = (fd, slowPipe, burnMs)
    }

    func readable() {
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        guard count > 0 else { return }
        pending += buffer[0..<count]
        while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: pending[..<end], as: UTF8.self)
            pending.removeSubrange(...end)
            Handlers.serve(Substring(line), on: fd, slowPipe: slowPipe, burnMs: burnMs)
        }
    }
}
