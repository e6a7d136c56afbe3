// Who a thread waits for, beyond a mutex's owner: the thread a pthread_join waits for, the writer of a glibc
// rwlock, and the list of the process's threads (for snapshots). Watchdog thread only; nothing here signals or
// blocks on a thread, and memory is read with process_vm_readv.
#include "stallcapture_probe.h"
#include "stallcapture_threads.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

int stallcap_list_threads(pid_t *tids, int capacity, int *total) {
    int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buffer[4096];
    int kept = 0, seen = 0;
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buffer, sizeof buffer);
        if (n <= 0) break;
        for (long offset = 0; offset < n;) {
            struct dirent64 *entry = (struct dirent64 *)(buffer + offset);
            offset += entry->d_reclen;
            long tid = 0;
            const char *p = entry->d_name;
            if (*p < '0' || *p > '9') continue;
            for (; *p >= '0' && *p <= '9' && tid < 0x7fffffff; p++) tid = tid * 10 + (*p - '0');
            if (*p != '\0' || tid <= 0) continue;
            seen++;
            if (kept < capacity) tids[kept++] = (pid_t)tid;
        }
    }
    close(fd);
    if (total) *total = seen;
    return kept;
}

// A futex wait (plain or bitset, any clock) on `state`'s first argument for the value in its third.
static int futex_wait_word(const stallcap_syscall_state *state, uint64_t *address, uint32_t *expected) {
    if (state->kind != STALLCAP_SYSCALL_IN_CALL || state->nr != SYS_futex) return 0;
    int op = (int)(state->args[1] & ~(uint64_t)(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME));
    if (op != FUTEX_WAIT && op != FUTEX_WAIT_BITSET) return 0;
    if (state->args[0] == 0 || state->args[0] % 4 != 0) return 0;
    *address = state->args[0];
    *expected = (uint32_t)state->args[2];
    return 1;
}

// Offset of `tid` in glibc's struct pthread (the thread descriptor pthread_self() returns), learned once from the
// calling thread's own descriptor: the first 8-byte-aligned int equal to its tid (the high half of a pointer,
// which a tid could equal, is never 8-byte-aligned on a little-endian machine). 0 when not found.
static _Atomic long g_tid_offset = -1;

static long pthread_tid_offset(void) {
    long known = atomic_load(&g_tid_offset);
    if (known >= 0) return known;
    uint64_t self = (uint64_t)(uintptr_t)pthread_self();
    int ints[64];
    long found = 0;
    // In 256-byte steps: the descriptor may end close to the end of its mapping.
    for (long base = 0; found == 0 && base < 4096; base += (long)sizeof ints) {
        if (stallcap_read_memory(self + (uint64_t)base, ints, sizeof ints) != 0) break;
        for (long i = base == 0 ? 2 : 0; i < 64; i += 2) {
            if (ints[i] == stallcap_gettid()) {
                found = base + i * (long)sizeof(int);
                break;
            }
        }
    }
    atomic_store(&g_tid_offset, found);
    return found;
}

// True when `descriptor` looks like a glibc thread descriptor: on x86_64 its first word (the TCB's `tcb`) and its
// third (`self`) point to itself.
static int is_thread_descriptor(uint64_t descriptor) {
#if defined(__x86_64__)
    uint64_t header[3];
    return stallcap_read_memory(descriptor, header, sizeof header) == 0 && header[0] == descriptor &&
           header[2] == descriptor;
#else
    (void)descriptor;
    return 1;
#endif
}

pid_t stallcap_futex_join_target(const stallcap_syscall_state *state, pid_t waiter) {
    uint64_t address;
    uint32_t expected, word = 0;
    if (!futex_wait_word(state, &address, &expected)) return 0;
    // glibc's pthread_join sleeps on the joined thread's descriptor's `tid` field while it still holds that tid
    // (the kernel clears it when the thread exits: CLONE_CHILD_CLEARTID). The word must be such a field.
    long offset = pthread_tid_offset();
    if (offset <= 0 || address < (uint64_t)offset || !is_thread_descriptor(address - (uint64_t)offset)) return 0;
    if (stallcap_read_memory(address, &word, sizeof word) != 0) return 0;
    pid_t target = (pid_t)word;
    if (word != expected || target <= 0 || target == waiter || target == stallcap_gettid() ||
        !stallcap_thread_alive(target))
        return 0;
    return target;
}

// glibc's pthread_rwlock_t (x86_64 and aarch64): __readers 0, __writers 4, __wrphase_futex 8, __writers_futex 12,
// __pad3 16, __pad4 20, __cur_writer 24. Readers sleep on __wrphase_futex, writers on __writers_futex or
// __wrphase_futex, so __cur_writer lies 16 or 12 bytes after the word slept on.
enum { CUR_WRITER = 24, WRPHASE_FUTEX = 8, WRITERS_FUTEX = 12 };
// The headers this is built with agree; the glibc the process runs with is checked (rwlock_layout_ok).
_Static_assert(offsetof(pthread_rwlock_t, __data.__cur_writer) == CUR_WRITER, "glibc rwlock: __cur_writer");
_Static_assert(offsetof(pthread_rwlock_t, __data.__wrphase_futex) == WRPHASE_FUTEX, "glibc rwlock: __wrphase_futex");
_Static_assert(offsetof(pthread_rwlock_t, __data.__writers_futex) == WRITERS_FUTEX, "glibc rwlock: __writers_futex");
static _Atomic int g_rwlock_layout = -1;

// The start-up check of the glibc pthread_rwlock_t layout relied on: write-locks an rwlock of our own and verifies
// that `__cur_writer` holds our tid, and 0 after unlocking. Done once; 1 when it holds.
static int rwlock_layout_ok(void) {
    int known = atomic_load(&g_rwlock_layout);
    if (known >= 0) return known;
    pthread_rwlock_t lock;
    int ok = pthread_rwlock_init(&lock, NULL) == 0 && sizeof lock >= CUR_WRITER + sizeof(int);
    if (ok) {
        int writer = 0;
        ok = pthread_rwlock_wrlock(&lock) == 0;
        if (ok) {
            ok = stallcap_read_memory((uint64_t)(uintptr_t)&lock + CUR_WRITER, &writer, sizeof writer) == 0 &&
                 writer == stallcap_gettid();
            pthread_rwlock_unlock(&lock);
        }
        ok = ok && stallcap_read_memory((uint64_t)(uintptr_t)&lock + CUR_WRITER, &writer, sizeof writer) == 0 &&
             writer == 0;
        pthread_rwlock_destroy(&lock);
    }
    atomic_store(&g_rwlock_layout, ok);
    return ok;
}

pid_t stallcap_futex_rwlock_writer(const stallcap_syscall_state *state, pid_t waiter) {
    uint64_t address;
    uint32_t expected;
    if (!futex_wait_word(state, &address, &expected)) return 0;
    // Both waits are for 1 | PTHREAD_RWLOCK_FUTEX_USED (3), a writer's phase wait for PTHREAD_RWLOCK_FUTEX_USED (2).
    if ((expected != 2 && expected != 3) || !rwlock_layout_ok()) return 0;
    const int offsets[2] = {WRPHASE_FUTEX, WRITERS_FUTEX};
    for (int k = 0; k < 2; k++) {
        if (address < (uint64_t)offsets[k]) continue;
        int fields[7];  // __readers ... __cur_writer
        if (stallcap_read_memory(address - (uint64_t)offsets[k], fields, sizeof fields) != 0) continue;
        // A writer holds it: __readers has PTHREAD_RWLOCK_WRLOCKED (2), __cur_writer its tid.
        int writer = fields[CUR_WRITER / 4];
        if ((fields[0] & 2) == 0 || writer <= 0 || writer == waiter || writer == stallcap_gettid()) continue;
        if (stallcap_thread_alive(writer)) return writer;
    }
    return 0;
}
