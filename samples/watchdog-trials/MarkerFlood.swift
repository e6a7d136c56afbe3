// watchdog-trials marker-flood: a thread marks in a tight loop for the whole run while the main thread makes 3,000
// markers at a modest rate (two per millisecond) in five busy stalls of 600 each (about 300 ms each). Between stalls the main thread
// waits (at most 10 s) until the stall's last marker is in the capture file, so that the watchdog drained its
// rings between the stalls whatever the machine's load. Prints, on standard error:
//   flooder TID made N
//   main TID made 3000
//   episode K markers FIRST..LAST        (main's marker names are `main <index>`)
import Dispatch
import Foundation
import StallProfiler
import StallSamples
import Synchronization

/// Writes `line` and a newline to standard error.
func report(_ line: String) { FileHandle.standardError.write(Data((line + "\n").utf8)) }

/// The bytes a marker record holds for the name `name`: its length (u32, little-endian), then its UTF-8.
func encodedName(_ name: String) -> [UInt8] {
    let utf8 = Array(name.utf8)
    return withUnsafeBytes(of: UInt32(utf8.count).littleEndian) { Array($0) } + utf8
}

/// Waits (at most `limitNs`) until the file at `path` contains `needle`; `offset` is where to read from next.
func waitForBytes(_ needle: [UInt8], in path: String, offset: inout UInt64, limitNs: UInt64) {
    let deadline = monotonicNanoseconds() + limitNs
    let pattern = Data(needle)
    var tail = Data()
    while monotonicNanoseconds() < deadline {
        if let handle = FileHandle(forReadingAtPath: path) {
            _ = try? handle.seek(toOffset: offset)
            let fresh = (try? handle.readToEnd()) ?? Data()
            try? handle.close()
            offset += UInt64(fresh.count)
            let window = tail + fresh
            if window.range(of: pattern) != nil { return }
            tail = window.suffix(needle.count - 1)
        }
        usleep(10_000)
    }
}

let floodStop = Atomic<Bool>(false)

/// The main thread's side: its markers and where the capture file was read to (touched on the main queue only).
final class MainMarking: @unchecked Sendable {
    let watchdog: StallWatchdog?
    let path = ProcessInfo.processInfo.environment["STALLPROF_OUTPUT"] ?? ""
    let flooderDone = DispatchSemaphore(value: 0)
    let tid = kernelThreadID()
    var offset: UInt64 = 0
    var next = 0

    init(_ watchdog: StallWatchdog?) { self.watchdog = watchdog }

    func episode(_ number: Int) {
        guard number < 5 else {
            floodStop.store(true, ordering: .relaxed)
            flooderDone.wait()
            report("main \(tid) made \(next)")
            finish(watchdog, status: 0)
        }
        let first = next
        for index in 0..<600 {  // two markers per millisecond, spinning in between: a busy stall of about 300 ms
            StallMarker.mark("main \(next)")
            next += 1
            if index % 2 == 1 { _ = BusyWork.spin(milliseconds: 1) }
        }
        report("episode \(number) markers \(first)..\(next - 1)")
        DispatchQueue.main.async {  // the stall has ended: wait for its last marker to reach the file
            waitForBytes(encodedName("main \(self.next - 1)"), in: self.path, offset: &self.offset,
                         limitNs: 10_000_000_000)
            self.episode(number + 1)
        }
    }
}

func markerFlood(_ watchdog: StallWatchdog?) {
    let main = MainMarking(watchdog)
    Thread {
        let tid = kernelThreadID()
        var made = 0
        while !floodStop.load(ordering: .relaxed) {
            StallMarker.mark("flood")
            made += 1
        }
        report("flooder \(tid) made \(made)")
        main.flooderDone.signal()
    }.start()
    DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(300)) { main.episode(0) }
}
