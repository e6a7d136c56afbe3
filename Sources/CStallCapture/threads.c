// Thread ids, names, clocks and per-thread counters read from /proc/self/task. Never called from signal context.
#include "stallcapture_threads.h"
#include "cputimer.h"
#include "files.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

pid_t stallcap_gettid(void) { return (pid_t)syscall(SYS_gettid); }

void stallcap_name_thread(const char *name) {
    char truncated[16];
    strncpy(truncated, name, sizeof truncated - 1);
    truncated[sizeof truncated - 1] = '\0';
    pthread_setname_np(pthread_self(), truncated);
}

static uint64_t read_clock(clockid_t clock) {
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t stallcap_monotonic_ns(void) { return read_clock(CLOCK_MONOTONIC); }

uint64_t stallcap_realtime_ns(void) { return read_clock(CLOCK_REALTIME); }

int64_t stallcap_thread_cpu_ns(pid_t tid) {
    struct timespec ts;
    if (clock_gettime(stallcap_thread_cpu_clock(tid), &ts) != 0) return -1;
    return (int64_t)ts.tv_sec * 1000000000ll + (int64_t)ts.tv_nsec;
}

int stallcap_thread_schedstat(pid_t tid, uint64_t *run_ns, uint64_t *wait_ns) {
    char text[128];
    if (stallcap_read_task_file(tid, "schedstat", text, sizeof text) < 0) return -1;
    unsigned long long run = 0, wait = 0;
    if (sscanf(text, "%llu %llu", &run, &wait) != 2) return -1;
    *run_ns = run;
    *wait_ns = wait;
    return 0;
}

int stallcap_thread_switches(pid_t tid, uint64_t *voluntary, uint64_t *involuntary) {
    char text[4096];
    if (stallcap_read_task_file(tid, "status", text, sizeof text) < 0) return -1;
    // "voluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n", near the end of the file.
    const char *v = strstr(text, "\nvoluntary_ctxt_switches:");
    const char *n = strstr(text, "\nnonvoluntary_ctxt_switches:");
    if (v == NULL || n == NULL) return -1;
    unsigned long long vol = 0, invol = 0;
    if (sscanf(v + strlen("\nvoluntary_ctxt_switches:"), "%llu", &vol) != 1) return -1;
    if (sscanf(n + strlen("\nnonvoluntary_ctxt_switches:"), "%llu", &invol) != 1) return -1;
    *voluntary = vol;
    *involuntary = invol;
    return 0;
}

int stallcap_thread_blocked_signals(pid_t tid, uint64_t *blocked) {
    char text[4096];
    if (stallcap_read_task_file(tid, "status", text, sizeof text) < 0) return -1;
    // "SigBlk:\t0000000000000000\n": 16 hex digits, bit n-1 for signal n.
    const char *field = strstr(text, "\nSigBlk:");
    if (field == NULL) return -1;
    unsigned long long mask = 0;
    if (sscanf(field + strlen("\nSigBlk:"), "%llx", &mask) != 1) return -1;
    *blocked = mask;
    return 0;
}

char stallcap_thread_state(pid_t tid) {
    char text[512];
    if (stallcap_read_task_file(tid, "stat", text, sizeof text) < 0) return 0;
    // "tid (comm) S ...": the comm may contain spaces and parentheses, so look after the last ')'.
    char *close_paren = strrchr(text, ')');
    if (close_paren == NULL || close_paren[1] != ' ') return 0;
    return close_paren[2];
}

