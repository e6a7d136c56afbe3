import CStallProcess
import StallFormat
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Finds and kills what a run leaves outside its process group: processes that called `setsid` or were started
/// with a process group of their own (a double fork, `setsid cmd &` in a script). Each run's environment carries
/// a run id (``variable``); after the run's group is killed, every live process whose environment holds that id
/// is killed with SIGKILL, repeatedly until none is left. stallprof is a child subreaper, so orphans are
/// reparented to it and reaped here instead of by init. A process that clears its environment (`env -i`) is not
/// found.
enum ProcessReaper {
    /// The environment variable that names the run a process belongs to.
    static let variable = EnvironmentName.runID

    private static let runs = Atomic<Int>(0)
    private static let subreaper = Atomic<Bool>(false)

    /// Makes this process a child subreaper (once; a failure only means orphans are reaped by init).
    static func becomeSubreaper() {
        guard !subreaper.exchange(true, ordering: .relaxed) else { return }
        _ = stallproc_become_subreaper()
    }

    /// A run id unique among the runs of every live stallprof: this process id and a counter.
    static func newRunID() -> String { "\(getpid()).\(runs.add(1, ordering: .relaxed).newValue)" }

    /// Kills every live process of run `id` (SIGKILL) and reaps the ones that are (or became) children of this
    /// process. Gives up after about 2 s of processes that keep appearing. Returns how many were killed.
    @discardableResult
    static func killLeftovers(runID id: String) -> Int {
        let needle = Array("\(variable)=\(id)".utf8)
        var killed: Set<pid_t> = []
        for _ in 0..<200 {
            let live = members(needle)
            for pid in live where kill(pid, SIGKILL) == 0 { killed.insert(pid) }
            killed = killed.filter { !reap($0) }
            if live.isEmpty && killed.isEmpty { break }
            ProcessRunner.sleepSeconds(0.01)
        }
        return killed.count
    }

    /// True once `pid` is gone or reaped; false while it is a child of ours that has not ended yet.
    private static func reap(_ pid: pid_t) -> Bool {
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        if result == pid { return true }
        if result == 0 { return false }
        // Not our child: gone, or someone else's to reap (without a subreaper, init's).
        return kill(pid, 0) != 0 || isZombie(pid)
    }

    /// Live processes (not zombies) other than this one whose environment holds the entry `needle` ("NAME=ID").
    private static func members(_ needle: [UInt8]) -> [pid_t] {
        guard let directory = opendir("/proc") else { return [] }
        defer { closedir(directory) }
        var found: [pid_t] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let pid = pid_t(name), pid != getpid(),
                let environment = try? FileReader.contents(of: "/proc/\(name)/environ"),
                environment.split(separator: 0).contains(where: { $0.elementsEqual(needle) }), !isZombie(pid)
            else { continue }
            found.append(pid)
        }
        return found
    }

    private static func isZombie(_ pid: pid_t) -> Bool {
        guard let stat = FileReader.text(of: "/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: close)...].hasPrefix(" Z")
    }
}
