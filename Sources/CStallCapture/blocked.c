// What a blocked thread waits for and who owns the mutex: /proc reads, process_vm_readv and the start-up check
// of the glibc mutex layout. Called from the watchdog thread only; nothing here signals or blocks on a thread.
#include "stallcapture_probe.h"
#include "stallcapture_threads.h"
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

// SyscallState (SyscallDetail.swift) reads `args` as six contiguous UInt64 and `kind` as a 32-bit raw value of
// stallcap_syscall_kind.
_Static_assert(sizeof(((stallcap_syscall_state *)0)->args) == 6 * sizeof(uint64_t), "args: six UInt64 in Swift");
_Static_assert(sizeof(((stallcap_syscall_state *)0)->kind) == sizeof(uint32_t), "kind: a 32-bit raw value in Swift");

// Parses one unsigned number (0x-hex or decimal) at *cursor; advances past it. Returns 0, or -1.
static int parse_number(const char **cursor, uint64_t *value, int *negative) {
    const char *p = *cursor;
    while (*p == ' ' || *p == '\t') p++;
    *negative = 0;
    if (*p == '-') {
        *negative = 1;
        p++;
    }
    int base = 10;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
    }
    uint64_t v = 0;
    int digits = 0;
    for (;; p++, digits++) {
        int d;
        if (*p >= '0' && *p <= '9') d = *p - '0';
        else if (base == 16 && *p >= 'a' && *p <= 'f') d = *p - 'a' + 10;
        else if (base == 16 && *p >= 'A' && *p <= 'F') d = *p - 'A' + 10;
        else break;
        if (digits >= (base == 16 ? 16 : 20)) return -1;
        v = v * (uint64_t)base + (uint64_t)d;
    }
    if (digits == 0) return -1;
    if (*p != ' ' && *p != '\n' && *p != '\0' && *p != '\t') return -1;
    *cursor = p;
    *value = v;
    return 0;
}

stallcap_syscall_kind stallcap_parse_syscall(const char *text, stallcap_syscall_state *state) {
    memset(state, 0, sizeof *state);
    state->nr = -1;
    state->kind = STALLCAP_SYSCALL_UNKNOWN;
    if (text == NULL) return STALLCAP_SYSCALL_UNKNOWN;
    if (strncmp(text, "running", 7) == 0 && (text[7] == '\0' || text[7] == '\n')) {
        state->kind = STALLCAP_SYSCALL_RUNNING;
        return STALLCAP_SYSCALL_RUNNING;
    }
    uint64_t values[9];
    int count = 0, negative = 0, first_negative = 0;
    const char *cursor = text;
    while (count < 9) {
        while (*cursor == ' ' || *cursor == '\t') cursor++;
        if (*cursor == '\n' || *cursor == '\0') break;
        if (parse_number(&cursor, &values[count], &negative) != 0) return STALLCAP_SYSCALL_UNKNOWN;
        if (count == 0) first_negative = negative;
        else if (negative) return STALLCAP_SYSCALL_UNKNOWN;
        count++;
    }
    while (*cursor == ' ' || *cursor == '\t') cursor++;
    if (*cursor != '\n' && *cursor != '\0') return STALLCAP_SYSCALL_UNKNOWN;  // more than 9 numbers
    if (count == 3 && first_negative && values[0] == 1) {
        state->sp = values[1];
        state->pc = values[2];
        state->kind = STALLCAP_SYSCALL_USER;
        return STALLCAP_SYSCALL_USER;
    }
    if (count != 9 || first_negative || values[0] > 0x7fffffff) return STALLCAP_SYSCALL_UNKNOWN;
    state->nr = (int32_t)values[0];
    for (int i = 0; i < 6; i++) state->args[i] = values[1 + i];
    state->sp = values[7];
    state->pc = values[8];
    state->kind = STALLCAP_SYSCALL_IN_CALL;
    return STALLCAP_SYSCALL_IN_CALL;
}

stallcap_syscall_kind stallcap_read_syscall(pid_t tid, stallcap_syscall_state *state) {
    char text[256];
    if (stallcap_read_task_file(tid, "syscall", text, sizeof text) < 0) return stallcap_parse_syscall(NULL, state);
    return stallcap_parse_syscall(text, state);
}

int stallcap_thread_comm(pid_t tid, char *name, size_t size) {
    if (size < 2) return -1;
    ssize_t n = stallcap_read_task_file(tid, "comm", name, size);
    if (n < 0) return -1;
    if (n > 0 && name[n - 1] == '\n') name[--n] = '\0';
    return (int)n;
}

int stallcap_thread_alive(pid_t tid) {
    if (tid <= 0) return 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d", (int)tid);
    return access(path, F_OK) == 0;
}

int stallcap_fd_target(int fd, char *target, size_t size) {
    if (fd < 0 || size < 2) return -1;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, target, size - 1);
    if (n < 0) return -1;
    target[n] = '\0';
    return (int)n;
}

int stallcap_read_memory(uint64_t address, void *buffer, size_t size) {
    if (size == 0) return 0;
    if (address == 0 || address + size < address) return -1;
    struct iovec local = {.iov_base = buffer, .iov_len = size};
    struct iovec remote = {.iov_base = (void *)(uintptr_t)address, .iov_len = size};
    ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    return n == (ssize_t)size ? 0 : -1;
}

// Offsets in glibc's struct __pthread_mutex_s (x86_64 and aarch64): int __lock at 0, __owner at 8, __kind at 16.
enum { OWNER_OFFSET = 8, KIND_OFFSET = 16 };
// The headers this is built with agree; the glibc the process runs with is checked at start-up (check_layout).
_Static_assert(offsetof(pthread_mutex_t, __data.__lock) == 0, "glibc mutex: the futex word first");
_Static_assert(offsetof(pthread_mutex_t, __data.__owner) == OWNER_OFFSET, "glibc mutex: __owner");
_Static_assert(offsetof(pthread_mutex_t, __data.__kind) == KIND_OFFSET, "glibc mutex: __kind");
// __kind bits glibc defines: type (3), robust (0x10), PI (0x20), PP (0x40), pshared (0x80), elision (0x300).
#define KNOWN_KIND_BITS 0x3f3u

static _Atomic int g_layout = -1;

static int check_layout(void) {
    pthread_mutex_t mutex;
    if (pthread_mutex_init(&mutex, NULL) != 0) return 0;
    pid_t self = stallcap_gettid();
    int ok = 1;
    int word = 0, owner = 0;
    if (pthread_mutex_lock(&mutex) != 0) ok = 0;
    if (ok) {
        ok = stallcap_read_memory((uint64_t)(uintptr_t)&mutex, &word, sizeof word) == 0 &&
             stallcap_read_memory((uint64_t)(uintptr_t)&mutex + OWNER_OFFSET, &owner, sizeof owner) == 0 &&
             word == 1 && owner == self;
        pthread_mutex_unlock(&mutex);
    }
    if (ok) {
        ok = stallcap_read_memory((uint64_t)(uintptr_t)&mutex + OWNER_OFFSET, &owner, sizeof owner) == 0 &&
             owner == 0;
    }
    pthread_mutex_destroy(&mutex);
    return ok && sizeof(pthread_mutex_t) >= KIND_OFFSET + sizeof(int);
}

int stallcap_mutex_layout_ok(void) {
    int known = atomic_load(&g_layout);
    if (known >= 0) return known;
    int ok = check_layout();
    atomic_store(&g_layout, ok);
    return ok;
}

pid_t stallcap_futex_mutex_owner(const stallcap_syscall_state *state, pid_t waiter) {
    if (state->kind != STALLCAP_SYSCALL_IN_CALL || state->nr != SYS_futex) return 0;
    uint64_t word_address = state->args[0];
    int op = (int)(state->args[1] & ~(uint64_t)(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME));
    if (word_address == 0 || word_address % 4 != 0) return 0;
    uint32_t word = 0;
    if (stallcap_read_memory(word_address, &word, sizeof word) != 0) return 0;
    pid_t owner = 0;
    if (op == FUTEX_LOCK_PI || op == 13 /* FUTEX_LOCK_PI2 */) {
        owner = (pid_t)(word & FUTEX_TID_MASK);  // a PI mutex keeps the owner's tid in the futex word itself
    } else if (op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET) {
        // glibc's lock wait sleeps while the word is 2 (locked, with waiters).
        if ((uint32_t)state->args[2] != 2 || word == 0) return 0;
        if (!stallcap_mutex_layout_ok()) return 0;
        int fields[3];  // __owner, __nusers, __kind
        if (stallcap_read_memory(word_address + OWNER_OFFSET, fields, sizeof fields) != 0) return 0;
        if (((uint32_t)fields[2] & ~KNOWN_KIND_BITS) != 0) return 0;
        owner = fields[0];
    } else {
        return 0;
    }
    if (owner <= 0 || owner == waiter || !stallcap_thread_alive(owner)) return 0;
    return owner;
}
