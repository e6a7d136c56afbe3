import CStallProcess
import StallFormat
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Finds and kills what a run leaves outside its process group: processes that called `setsid` or were started
/// with a process group of their own (a double fork, `setsid cmd &` in a script), with or without their
/// environment (`env -i`). A run's processes are found three ways:
/// - by process tree: the leader's descendants (parent ids in /proc), taken before the group is killed, each
///   remembered with its start time so that a reused pid is never taken for it;
/// - as orphans: stallprof is a child subreaper, so a run's process whose parent died is reparented to stallprof
///   itself (a child of stallprof outside stallprof's own process group: run leaders get groups of their own). Such an orphan cannot be told apart between runs that are alive at the same time, so orphans (and
///   their descendants) are killed once no run of this process is in progress: when the last run of a batch is
///   cleaned up, and when the batch ends;
/// - by environment: each run's environment carries a run id (``variable``).
/// Every process found is stopped (SIGSTOP, so that it forks nothing more while its descendants are collected),
/// then killed with SIGKILL, repeatedly until none is left. Apart from the environment match, everything killed
/// is a descendant of stallprof.
enum ProcessReaper {
    /// The environment variable that names the run a process belongs to.
    static let variable = EnvironmentName.runID

    private static let runs = Atomic<Int>(0)
    private static let subreaper = Atomic<Bool>(false)
    /// Leaders of the runs in progress (started and not yet cleaned up): children of ours that are no orphans.
    private static let leaders = Mutex<Set<pid_t>>([])

    /// Makes this process a child subreaper (once; a failure only means orphans are reaped by init).
    static func becomeSubreaper() {
        guard !subreaper.exchange(true, ordering: .relaxed) else { return }
        _ = stallproc_become_subreaper()
    }

    /// A run id unique among the runs of every live stallprof: this process id and a counter.
    static func newRunID() -> String { "\(getpid()).\(runs.add(1, ordering: .relaxed).newValue)" }

    /// Records `pid` as the leader of a run in progress (until ``killLeftovers(runID:tree:leader:)``).
    static func started(leader pid: pid_t) { leaders.withLock { _ = $0.insert(pid) } }

    /// A process's start time (clock ticks after boot), which tells it apart from a later process with its pid.
    typealias StartTime = UInt64

    /// The live or zombie descendants of `pid` (not `pid` itself) with their start times. `pid` must be a child of
    /// ours not yet reaped, so that its id is not reused.
    static func descendants(of pid: pid_t) -> [pid_t: StartTime] {
        let table = processTable()
        var found: [pid_t: StartTime] = [:]
        for member in closure(of: [pid], in: table) where member != pid { found[member] = table[member]!.start }
        return found
    }

    /// Kills every live process of the run `id` (SIGKILL): the remembered `tree` (pid and start time, see
    /// ``descendants(of:)``) and the processes whose environment holds the run id, with all their descendants;
    /// and, once no run is in progress any longer, every orphan reparented to this process (with descendants).
    /// `leader` (the run's leader, already reaped) stops counting as a run in progress. Reaps what is (or became)
    /// a child of ours. Gives up after about 2 s of processes that keep appearing. Returns how many were killed.
    @discardableResult
    static func killLeftovers(runID id: String?, tree: [pid_t: StartTime] = [:], leader: pid_t? = nil) -> Int {
        if let leader { leaders.withLock { _ = $0.remove(leader) } }
        let me = getpid()
        let ownGroup = getpgrp()
        let needle = id.map { Array("\(variable)=\($0)".utf8) }
        var members = tree
        var stopped: Set<pid_t> = []
        var killed: Set<pid_t> = []
        for _ in 0..<200 {
            let table = processTable()
            members = members.filter { table[$0.key]?.start == $0.value }
            var roots = Set(members.keys)
            if let needle { roots.formUnion(table.keys.filter { $0 != me && hasEntry(needle, $0) }) }
            // Orphans: children of ours outside our own process group (a run's leader has a group of its own and an
            // orphan of it left that group or its session; a child some other code of this process started shares
            // our group and is left alone).
            if leaders.withLock({ $0.isEmpty }) {
                roots.formUnion(table.filter { $0.value.parent == me && $0.value.group != ownGroup }.keys)
            }
            for pid in closure(of: roots, in: table) where pid != me { members[pid] = table[pid]!.start }
            for (pid, _) in members where table[pid]!.zombie && table[pid]!.parent == me { _ = reap(pid) }
            let live = members.keys.filter { !table[$0]!.zombie }
            // Stop first: a child forked before the stop is still linked to its (stopped) parent at the next look.
            let fresh = live.filter { !stopped.contains($0) }
            if !fresh.isEmpty {
                for pid in fresh {
                    kill(pid, SIGSTOP)
                    stopped.insert(pid)
                }
                continue
            }
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

    /// One process of /proc: its parent, start time and whether it is a zombie.
    private struct Entry {
        var parent: pid_t
        var group: pid_t
        var start: StartTime
        var zombie: Bool
    }

    /// Every process of /proc (from its stat file).
    private static func processTable() -> [pid_t: Entry] {
        guard let directory = opendir("/proc") else { return [:] }
        defer { closedir(directory) }
        var table: [pid_t: Entry] = [:]
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let pid = pid_t(name), let stat = FileReader.text(of: "/proc/\(name)/stat"),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // After the command name: state (field 3), ppid (4), pgrp (5), ..., starttime (22).
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 19, let parent = pid_t(fields[1]), let group = pid_t(fields[2]),
                let start = StartTime(fields[19])
            else { continue }
            table[pid] = Entry(parent: parent, group: group, start: start, zombie: fields[0] == "Z")
        }
        return table
    }

    /// `roots` that are in `table` and every process of `table` descended from one of them.
    private static func closure(of roots: Set<pid_t>, in table: [pid_t: Entry]) -> Set<pid_t> {
        var children: [pid_t: [pid_t]] = [:]
        for (pid, entry) in table { children[entry.parent, default: []].append(pid) }
        var found = roots.filter { table[$0] != nil }
        var pending = Array(found)
        while let pid = pending.popLast() {
            for child in children[pid] ?? [] where found.insert(child).inserted { pending.append(child) }
        }
        return found
    }

    /// True when the environment of `pid` holds the entry `needle` ("NAME=ID").
    private static func hasEntry(_ needle: [UInt8], _ pid: pid_t) -> Bool {
        guard let environment = try? FileReader.contents(of: "/proc/\(pid)/environ") else { return false }
        return environment.split(separator: 0).contains { $0.elementsEqual(needle) }
    }

    private static func isZombie(_ pid: pid_t) -> Bool {
        guard let stat = FileReader.text(of: "/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: close)...].hasPrefix(" Z")
    }
}
