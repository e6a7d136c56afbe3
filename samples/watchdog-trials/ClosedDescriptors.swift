// watchdog-trials close-own / closefrom: an app that closes descriptors it does not own, then opens files of its
// own on their numbers. The watchdog must never write into those files, and must keep its capture.
//
// close-own APP-DIR: once the watchdog sleeps deeply, close exactly its descriptors, found by what they are: the
//   capture file (its path), and the deep sleep's epoll set, the stop pipe's two ends, the duplicate of the run
//   loop's epoll descriptor, the signalfd of its CPU wake and the eventfd of its AIO watch (the epoll set that holds
//   a pipe; the pipe's other end; the epoll, signalfd and eventfd descriptors it holds).
// closefrom APP-DIR: start the watchdog and call closefrom(3) at once, while holding the loader's lock (inside a
//   dl_iterate_phdr callback), so that the watchdog thread has not yet pinged the main queue (which makes
//   libdispatch create its own descriptor, one that closefrom would break for the app itself).
// Then both open AppFiles.count files in APP-DIR (app-0 ... app-6, which take the freed numbers), write a known
// text into each, stall the main queue 600 ms, stop the watchdog, and check every app file is still its text.
// Prints `closed: ...` and `opened: ...` (descriptor numbers) on stderr; exits 0 when every file is intact, 4 when
// not, 5 when the descriptors were not found.
import Foundation
import StallProfiler
import StallSamples

/// Opens the app files in `directory` and writes their text; returns their descriptors.
func openAppFiles(in directory: String) -> [Int32] {
    (0..<AppFiles.count).map { index in
        let fd = open("\(directory)/app-\(index)", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        let text = Array(AppFiles.text(index).utf8)
        _ = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        return fd
    }
}

func say(_ line: String) { FileHandle.standardError.write(Data((line + "\n").utf8)) }

/// The target of /proc/self/fd/N.
func descriptorTarget(_ fd: Int32) -> String {
    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) ?? ""
}

/// The open descriptors above 2.
func openDescriptors() -> [Int32] {
    ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap(Int32.init)
        .filter { $0 > 2 }.sorted()
}

/// The watchdog's descriptors, found by what they are (see the top of this file); nil when not all are there.
func watchdogDescriptors(capturePath: String) -> [Int32]? {
    let all = openDescriptors()
    let capture = all.filter { descriptorTarget($0) == capturePath }
    for epoll in all where descriptorTarget(epoll) == "anon_inode:[eventpoll]" {
        let info = (try? String(contentsOfFile: "/proc/self/fdinfo/\(epoll)", encoding: .utf8)) ?? ""
        let held = info.split(separator: "\n").filter { $0.hasPrefix("tfd:") }
            .compactMap { Int32($0.dropFirst(4).split(separator: " ").first ?? "") }
        let signals = held.filter { descriptorTarget($0) == "anon_inode:[signalfd]" }
        let events = held.filter { descriptorTarget($0) == "anon_inode:[eventfd]" }
        guard held.count == 2 + signals.count + events.count, signals.count <= 1, events.count <= 1,
            let readEnd = held.first(where: { descriptorTarget($0).hasPrefix("pipe:") }),
            let duplicate = held.first(where: { $0 != readEnd && !signals.contains($0) && !events.contains($0) })
        else { continue }
        let pipe = descriptorTarget(readEnd)
        let ends = all.filter { descriptorTarget($0) == pipe }
        guard ends.count == 2, capture.count == 1 else { return nil }
        return (capture + [epoll, duplicate] + ends + signals + events).sorted()
    }
    return nil
}

/// Stalls the main queue 600 ms (300 ms from now), then stops the watchdog and checks the app files: exit 0 when all are intact.
func stallThenCheck(_ watchdog: StallWatchdog?, files: [Int32]) {
    // After the main queue has answered the watchdog: a stall before that is not one it can see.
    DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(300)) {
        _ = BusyWork.spin(milliseconds: 600)
        DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(300)) {
            watchdog?.stop()
            var intact = true
            for (index, fd) in files.enumerated() {
                let expected = Array(AppFiles.text(index).utf8)
                var actual = [UInt8](repeating: 0, count: expected.count + 4096)
                let count = pread(fd, &actual, actual.count, 0)
                if count != expected.count || Array(actual.prefix(count)) != expected {
                    say("app file \(index) (descriptor \(fd)) changed: \(count) bytes, \(expected.count) expected")
                    intact = false
                }
            }
            exit(intact ? 0 : 4)
        }
    }
}

/// close-own: closes exactly the watchdog's descriptors once it sleeps deeply, from another thread.
func closeOwn(_ watchdog: StallWatchdog?, directory: String) {
    guard let watchdog else {
        say("close-own: no watchdog (set STALLPROF_OUTPUT)")
        exit(2)
    }
    Thread {
        guard WatchdogThread.waitForDeepSleep(), let owned = watchdogDescriptors(capturePath: watchdog.configuration.outputPath) else {
            say("close-own: the watchdog's descriptors were not found: \(openDescriptors().map { "\($0) \(descriptorTarget($0))" })")
            exit(5)
        }
        for fd in owned { close(fd) }
        let files = openAppFiles(in: directory)
        say("closed: \(owned.map(String.init).joined(separator: " "))")
        say("opened: \(files.map(String.init).joined(separator: " "))")
        DispatchQueue.main.async { stallThenCheck(watchdog, files: files) }
    }.start()
}

nonisolated(unsafe) var closefromWatchdog: StallWatchdog? = nil
nonisolated(unsafe) var closefromFiles: [Int32] = []
nonisolated(unsafe) var closefromDirectory = ""

/// closefrom: starts the watchdog, closes every descriptor from 3 and opens the app files, all while holding the
/// loader's lock (the watchdog thread reads the image list before its first ping).
func closeFrom(directory: String) {
    closefromDirectory = directory
    // dl_iterate_phdr (link.h, not in the Glibc module): it calls back with the loader's lock held.
    typealias Visit = @convention(c) (UnsafeMutableRawPointer?, Int, UnsafeMutableRawPointer?) -> Int32
    typealias Iterate = @convention(c) (Visit, UnsafeMutableRawPointer?) -> Int32
    guard let symbol = dlsym(nil, "dl_iterate_phdr") else { exit(2) }
    _ = unsafeBitCast(symbol, to: Iterate.self)({ _, _, _ in
        do { closefromWatchdog = try StallWatchdog.startFromEnvironment() } catch {
            say("closefrom: \(error)")
            exit(3)
        }
        say("closed: \(openDescriptors().map { "\($0) (\(descriptorTarget($0)))" }.joined(separator: " "))")
        closefrom(3)
        closefromFiles = openAppFiles(in: closefromDirectory)
        say("opened: \(closefromFiles.map(String.init).joined(separator: " "))")
        return 1  // one callback is enough
    }, nil)
    stallThenCheck(closefromWatchdog, files: closefromFiles)
}
