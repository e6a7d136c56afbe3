// watchdog-trials plugins LIB [LIB2]: stalls whose lock owner runs in a plugin, for the capture handler's unwinder.
// Each plugin exports `plugin_work(callback)`, which calls `callback` (here: spin 600 ms) from its own frame; the
// tests build them. LIB is loaded before the watchdog starts. Stall 1: the main thread waits for a mutex whose owner
// spins under LIB's `plugin_work`; the watchdog samples the owner once with the signal (its unwind rules enter the
// handler's cache). With LIB2: LIB is unloaded, LIB2 loaded (the loader usually maps it at LIB's address), then
// stall 2 the same way under LIB2's. Each owner never answered a ping (unknown stack bounds to the handler) and runs
// on a stack of its own with 256 KiB of unreadable memory right above it (a thread stack below another's guard page
// has one such page). The stack is 256 KiB: ThreadSanitizer's runtime needs about 134 KiB of a stack it is given.
// Prints where each plugin's `plugin_work` was loaded; exits 0, 2 on a usage or load error.
import CStallCapture
import Dispatch
import Foundation
import StallProfiler
import StallSamples

typealias PluginWork = @convention(c) (@convention(c) () -> Void) -> Void

/// When the owner's callback stops spinning, monotonic nanoseconds.
nonisolated(unsafe) var pluginSpinUntil: UInt64 = 0

/// The owner's thread: takes the mutex, runs the plugin, releases the mutex.
final class PluginOwner: @unchecked Sendable {
    let work: PluginWork
    let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    let taken = DispatchSemaphore(value: 0)
    init(work: @escaping PluginWork) {
        self.work = work
        pthread_mutex_init(mutex, nil)
    }
}

/// The Swift frame that calls the plugin (not inlined, work after the call: a frame of its own on the owner's stack).
@inline(never)
func runPluginOwner(_ owner: PluginOwner) {
    stallcap_name_thread(BlockedWork.holderThreadName)
    pthread_mutex_lock(owner.mutex)
    owner.taken.signal()
    owner.work { while monotonicNanoseconds() < pluginSpinUntil {} }
    pthread_mutex_unlock(owner.mutex)
}

/// Starts `owner` on a 256 KiB stack with 256 KiB of PROT_NONE above it; the caller joins it.
func startPluginOwner(_ owner: PluginOwner) -> pthread_t {
    let size = 256 * 1024, above = 256 * 1024
    guard let memory = mmap(nil, size + above, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
        memory != MAP_FAILED, mprotect(memory + size, above, PROT_NONE) == 0
    else { exit(2) }
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    pthread_attr_setstack(&attributes, memory, size)
    var thread = pthread_t()
    let started = pthread_create(&thread, &attributes, { context in
        runPluginOwner(Unmanaged<PluginOwner>.fromOpaque(context!).takeRetainedValue())
        return nil
    }, Unmanaged.passRetained(owner).toOpaque())
    pthread_attr_destroy(&attributes)
    if started != 0 { exit(2) }
    return thread
}

/// A blocked stall of the main thread: it waits 600 ms for the mutex an owner holds while it spins in `work`.
func pluginStall(_ work: @escaping PluginWork) {
    let owner = PluginOwner(work: work)
    pluginSpinUntil = monotonicNanoseconds() + 600_000_000
    let thread = startPluginOwner(owner)
    owner.taken.wait()
    pthread_mutex_lock(owner.mutex)
    pthread_mutex_unlock(owner.mutex)
    pthread_join(thread, nil)
}

/// Loads `path` and finds its `plugin_work`; exits 2 when it cannot.
func loadPlugin(_ path: String) -> (handle: UnsafeMutableRawPointer, work: PluginWork) {
    guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL), let symbol = dlsym(handle, "plugin_work") else {
        FileHandle.standardError.write(Data("watchdog-trials: cannot load \(path): \(String(cString: dlerror()))\n".utf8))
        exit(2)
    }
    FileHandle.standardError.write(Data("plugin_work of \(path) at \(symbol)\n".utf8))
    return (handle, unsafeBitCast(symbol, to: PluginWork.self))
}

func plugins(_ paths: [String]) {
    guard paths.count == 1 || paths.count == 2 else {
        FileHandle.standardError.write(Data("usage: STALLPROF_OUTPUT=PATH watchdog-trials plugins LIB [LIB2]\n".utf8))
        exit(2)
    }
    let first = loadPlugin(paths[0])
    let watchdog = try? StallWatchdog.startFromEnvironment()  // after the first plugin is loaded
    DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(300)) {
        pluginStall(first.work)
        DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(300)) {
            if paths.count == 2 {
                dlclose(first.handle)
                pluginStall(loadPlugin(paths[1]).work)
            }
            DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(300)) { finish(watchdog, status: 0) }
        }
    }
}
