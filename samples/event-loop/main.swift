// event-loop: a small epoll server shaped like SwiftNIO's (several loop threads, each with its own epoll set and
// connections), on a loopback TCP port, driven by a client in the same process. One handler does a blocking read of
// a slow pipe on loop 1 (a blocked loop), another burns the CPU on loop 2 (a busy loop); loop 0 and the main thread
// keep serving. Each loop is a watchdog target, added to the watchdog the environment starts:
//
//   STALLPROF_OUTPUT=server.stalls event-loop [--loops N] [--read-ms N] [--burn-ms N] [--threshold-ms N] [--idle-ms N]
//       [--dispatch-main]
//
// --loops (2-8, default 3) loop threads; the client sends `ping` on every connection every 10 ms for 1.6 s, and
// `slow-read` to loop 1 at 300 ms (the pipe is written --read-ms later, default 400) and `burn` to loop 2 at 1000 ms
// (--burn-ms, default 400). Each loop's threshold is --threshold-ms (default 50). Prints `loop-N tid T` for every
// loop, then stops the watchdog and exits 0. With --idle-ms, the client first leaves the server idle until the
// watchdog sleeps deeply (at most that long: every loop still in its epoll_wait), prints `deep sleep seen: true` or
// `false`, and sends `slow-read` at once: the loop's wake must wake the watchdog (its set is watched). With
// --dispatch-main the main thread parks in dispatchMain(), as a server's async `@main` does, instead of RunLoop.main.
import Dispatch
import Foundation
import Glibc
import StallProfiler
import StallSamples

var loopCount = 3, readMs = 400, burnMs = 400, thresholdMs = 50, idleMs = 0, parkInDispatchMain = false
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    if argument == "--dispatch-main" {
        parkInDispatchMain = true
        continue
    }
    let value = arguments.next().flatMap(Int.init) ?? -1
    switch argument {
    case "--loops" where (2...8).contains(value): loopCount = value
    case "--read-ms" where (1...60_000).contains(value): readMs = value
    case "--burn-ms" where (1...60_000).contains(value): burnMs = value
    case "--threshold-ms" where (10...10_000).contains(value): thresholdMs = value
    case "--idle-ms" where (0...60_000).contains(value): idleMs = value
    default:
        FileHandle.standardError.write(Data(
            "usage: event-loop [--loops 2-8] [--read-ms N] [--burn-ms N] [--threshold-ms 10-10000] [--idle-ms N] [--dispatch-main]\n"
                .utf8))
        exit(64)
    }
}

func fail(_ what: String) -> Never {
    FileHandle.standardError.write(Data("event-loop: \(what): errno \(errno)\n".utf8))
    exit(1)
}

let watchdog = DemoOptions.startWatchdogFromEnvironment()
let loops = (0..<loopCount).map { EventLoop(index: $0) }
for loop in loops {
    // The one line a SwiftNIO server needs per loop: `{ eventLoop.execute($0) }`.
    try! watchdog?.add(.executor("loop-\(loop.index)", threshold: .milliseconds(thresholdMs)) { loop.execute($0) })
}

// The server: a loopback listening socket; connection i is served by loop i.
let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
var address = sockaddr_in()
address.sin_family = sa_family_t(AF_INET)
address.sin_addr.s_addr = inet_addr("127.0.0.1")
var length = socklen_t(MemoryLayout<sockaddr_in>.size)
let bound = withUnsafeMutablePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 }
}
guard listener >= 0, bound, listen(listener, 16) == 0 else { fail("cannot listen on 127.0.0.1") }
var slowPipe: [Int32] = [0, 0]
guard pipe(&slowPipe) == 0 else { fail("pipe") }
var clients: [Int32] = []
for loop in loops {
    let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, length) == 0 }
    }
    let server = accept(listener, nil, nil)
    guard client >= 0, connected, server >= 0 else { fail("cannot connect to the server") }
    clients.append(client)
    let connection = Connection(fd: server, slowPipe: slowPipe[0], burnMs: burnMs)
    let registered = DispatchSemaphore(value: 0)
    nonisolated(unsafe) let unsafeConnection = connection
    loop.execute {
        loop.register(server) { _ in unsafeConnection.readable() }
        registered.signal()
    }
    registered.wait()
}
for loop in loops { print("loop-\(loop.index) tid \(loop.threadID)") }

// The client: pings on every connection, the slow read and the burn, then the end.
let driven = (clients: clients, slowWriter: slowPipe[1], readMs: readMs, burnMs: burnMs, idleMs: idleMs)
Thread {
    Client.drive(
        clients: driven.clients, slowWriter: driven.slowWriter, readMs: driven.readMs, burnMs: driven.burnMs,
        idleMs: driven.idleMs)
}.start()
if parkInDispatchMain { dispatchMain() }
RunLoop.main.run()

/// The client side, on a thread of its own.
enum Client {
    static func send(_ text: String, to client: Int32) {
        var bytes = Array(text.utf8)
        _ = Glibc.send(client, &bytes, bytes.count, Int32(MSG_NOSIGNAL))
    }

    /// Pings every connection every 10 ms for 1.6 s; `slow-read` to loop 1 at 300 ms (its pipe written `readMs`
    /// later) and `burn` to loop 2 at 1000 ms; then stops the watchdog on the main queue and exits. With `idleMs`,
    /// first waits (that long at most) for the watchdog's deep sleep, says whether it came, and sends `slow-read`
    /// at once.
    static func drive(clients: [Int32], slowWriter: Int32, readMs: Int, burnMs: Int, idleMs: Int) {
        if idleMs > 0 {
            print("deep sleep seen: \(WatchdogThread.waitForDeepSleep(seconds: Double(idleMs) / 1000))")
            fflush(nil)
        }
        let slowAtMs = idleMs > 0 ? 0 : 300
        let start = DispatchTime.now().uptimeNanoseconds
        var sentSlow = false, sentBurn = false
        while true {
            let elapsedMs = Int((DispatchTime.now().uptimeNanoseconds - start) / 1_000_000)
            if elapsedMs >= 1600 { break }
            if !sentSlow && elapsedMs >= slowAtMs {
                sentSlow = true
                send("slow-read\n", to: clients[1])
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(readMs)) {
                    var byte: UInt8 = 1
                    _ = write(slowWriter, &byte, 1)
                }
            }
            if !sentBurn && elapsedMs >= 1000 {
                sentBurn = true
                send("burn\n", to: clients[2 % clients.count])
            }
            for client in clients { send("ping\n", to: client) }
            usleep(10_000)
        }
        // Let the burn and the slow read end and the watchdog see every loop answer again.
        usleep(UInt32(max(readMs, burnMs) * 1000 + 300_000))
        DispatchQueue.main.async {
            watchdog?.stop()
            fflush(nil)
            exit(0)
        }
    }
}
