#if canImport(Glibc)
import Glibc
#endif

/// CPU-bound processes that load the machine while a test runs (the in-test twin of tools/cpu-hogs.sh): each a
/// shell loop under `timeout`, in a process group of its own, so that `stop()` kills it with its loop, and a
/// test that dies without stopping them leaves nothing behind for longer than `seconds`.
final class CPUHogs {
    private(set) var groups: [pid_t] = []

    /// Starts `count` hogs that end by themselves after `seconds`.
    init(_ count: Int, seconds: Int = 120) {
        for _ in 0..<count {
            var attributes = posix_spawnattr_t()
            posix_spawnattr_init(&attributes)
            defer { posix_spawnattr_destroy(&attributes) }
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
            posix_spawnattr_setpgroup(&attributes, 0)
            let words: [String] = ["timeout", "\(seconds)", "/bin/sh", "-c", "while :; do :; done"]
            let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
            defer { argv.forEach { free($0) } }
            var pid: pid_t = 0
            if posix_spawnp(&pid, "timeout", nil, &attributes, argv, environ) == 0 { groups.append(pid) }
        }
    }

    /// Kills every hog (SIGKILL to each group) and reaps it.
    func stop() {
        for group in groups {
            kill(-group, SIGKILL)
            var status: Int32 = 0
            while waitpid(group, &status, 0) < 0 && errno == EINTR {}
        }
        groups = []
    }

    deinit { stop() }
}
