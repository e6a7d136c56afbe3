import Foundation

/// What a sample can see of the watchdog thread from outside it, through /proc: for the trials and samples that
/// check the watchdog sleeps (deeply) before they act.
public enum WatchdogThread {
    /// The system call the watchdog thread (`stallprof-wd`) is in now, as /proc/self/task/TID/syscall's first
    /// field says (a number); nil when there is no such thread, or it runs.
    public static func syscall() -> Substring? {
        for tid in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? [] {
            let comm = (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8)) ?? ""
            guard comm.hasPrefix("stallprof-wd") else { continue }
            let call = (try? String(contentsOfFile: "/proc/self/task/\(tid)/syscall", encoding: .utf8)) ?? ""
            return call.split(separator: " ").first.flatMap { $0.first?.isNumber == true ? $0 : nil }
        }
        return nil
    }

    /// The system calls of the watchdog's deep sleep: epoll_wait, epoll_pwait (x86_64); epoll_pwait (aarch64). Its
    /// sleep between checks is a futex wait.
    public static let deepSleepCalls: Set<Substring> = ["232", "281", "22"]

    /// Returns true once the watchdog thread is seen in its deep sleep, looking every 100 ms; false after
    /// `seconds` without.
    public static func waitForDeepSleep(seconds: Double = 20) -> Bool {
        for _ in 0..<max(1, Int(seconds * 10)) {
            usleep(100_000)
            if syscall().map(deepSleepCalls.contains) == true { return true }
        }
        return false
    }
}
