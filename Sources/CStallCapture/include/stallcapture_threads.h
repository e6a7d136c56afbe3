// stallcapture_threads.h: thread ids, names, clocks and per-thread counters from /proc, for every Swift caller
// (the watchdog, the sampler, the probe, the markers' drain, tests and tools). None of these run in signal context.
#ifndef STALLCAPTURE_THREADS_H
#define STALLCAPTURE_THREADS_H

#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The kernel thread id of the calling thread.
pid_t stallcap_gettid(void);

/// Names the calling thread (at most 15 characters are kept), as shown by ps, top and debuggers.
void stallcap_name_thread(const char *name);

/// CLOCK_MONOTONIC in nanoseconds.
uint64_t stallcap_monotonic_ns(void);

/// CLOCK_REALTIME in nanoseconds since the Unix epoch.
uint64_t stallcap_realtime_ns(void);

/// CPU time consumed so far by thread `tid` of this process, in nanoseconds, or -1 when it cannot be read.
int64_t stallcap_thread_cpu_ns(pid_t tid);

/// Reads `/proc/self/task/<tid>/schedstat`: nanoseconds the thread has run and nanoseconds it has waited on a
/// run queue (ready but not running). Returns 0, or -1 when the file cannot be read.
int stallcap_thread_schedstat(pid_t tid, uint64_t *run_ns, uint64_t *wait_ns);

/// Reads the context-switch counters of thread `tid` from `/proc/self/task/<tid>/status`
/// (`voluntary_ctxt_switches`: the thread went to sleep, blocked or stopped; `nonvoluntary_ctxt_switches`: it was
/// preempted). Returns 0, or -1 when the file cannot be read or parsed.
int stallcap_thread_switches(pid_t tid, uint64_t *voluntary, uint64_t *involuntary);

/// Reads the blocked-signal mask of thread `tid` from `/proc/self/task/<tid>/status` (`SigBlk`, bit n-1 set when
/// signal n is blocked). Returns 0, or -1 when the file cannot be read or parsed.
int stallcap_thread_blocked_signals(pid_t tid, uint64_t *blocked);

/// The state letter of thread `tid` from `/proc/self/task/<tid>/stat` (`R` running or runnable, `S` sleeping,
/// `D` uninterruptible...), or 0 when it cannot be read.
char stallcap_thread_state(pid_t tid);

#ifdef __cplusplus
}
#endif

#endif
