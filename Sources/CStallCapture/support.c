// Thread ids, clocks and the loaded-image map. Called from the watchdog thread, never from signal context.
#define _GNU_SOURCE
#include "stallcapture_support.h"
#include "files.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <limits.h>
#include <pthread.h>
#include <link.h>
#include <stdlib.h>
#include <sys/auxv.h>
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
    // glibc's encoding of a per-thread CPU clock (CPUCLOCK_SCHED | CPUCLOCK_PERTHREAD_MASK).
    clockid_t clock = (clockid_t)(((unsigned int)~tid) << 3) | 6;
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0) return -1;
    return (int64_t)ts.tv_sec * 1000000000ll + (int64_t)ts.tv_nsec;
}

ssize_t stallcap_read_small_file(const char *path, char *text, size_t size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n;
    do {
        n = read(fd, text, size - 1);
    } while (n < 0 && errno == EINTR);
    close(fd);
    if (n <= 0) return -1;
    text[n] = '\0';
    return n;
}

// Reads /proc/self/task/<tid>/<name> into `text` (NUL-terminated); returns the length, or -1.
static ssize_t read_task_file(pid_t tid, const char *name, char *text, size_t size) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/%s", (int)tid, name);
    return stallcap_read_small_file(path, text, size);
}

int stallcap_thread_schedstat(pid_t tid, uint64_t *run_ns, uint64_t *wait_ns) {
    char text[128];
    if (read_task_file(tid, "schedstat", text, sizeof text) < 0) return -1;
    unsigned long long run = 0, wait = 0;
    if (sscanf(text, "%llu %llu", &run, &wait) != 2) return -1;
    *run_ns = run;
    *wait_ns = wait;
    return 0;
}

int stallcap_thread_switches(pid_t tid, uint64_t *voluntary, uint64_t *involuntary) {
    char text[4096];
    if (read_task_file(tid, "status", text, sizeof text) < 0) return -1;
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
    if (read_task_file(tid, "status", text, sizeof text) < 0) return -1;
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
    if (read_task_file(tid, "stat", text, sizeof text) < 0) return 0;
    // "tid (comm) S ...": the comm may contain spaces and parentheses, so look after the last ')'.
    char *close_paren = strrchr(text, ')');
    if (close_paren == NULL || close_paren[1] != ' ') return 0;
    return close_paren[2];
}

struct iterate_context {
    void (*callback)(const stallcap_image *, void *);
    void *context;
    uint64_t adds;
    char exe[PATH_MAX];
};

static void find_build_id(const struct dl_phdr_info *info, stallcap_image *image) {
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE) continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = p + ph->p_memsz;
        uint32_t align = ph->p_align == 8 ? 7u : 3u;  // notes in an 8-aligned segment are padded to 8
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *note = (const ElfW(Nhdr) *)p;
            const uint8_t *name = p + sizeof(ElfW(Nhdr));
            const uint8_t *desc = name + ((note->n_namesz + align) & ~align);
            const uint8_t *next = desc + ((note->n_descsz + align) & ~align);
            if (next > end) break;
            if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
                image->build_id = desc;
                image->build_id_length = note->n_descsz;
                return;
            }
            p = next;
        }
    }
}

static int visit(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct iterate_context *ctx = data;
    ctx->adds = info->dlpi_adds;
    if (ctx->callback == NULL) return 1;
    stallcap_image image;
    memset(&image, 0, sizeof image);
    image.path = (info->dlpi_name && info->dlpi_name[0]) ? info->dlpi_name : ctx->exe;
    image.load_bias = (uint64_t)info->dlpi_addr;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uint64_t s = (uint64_t)info->dlpi_addr + ph->p_vaddr;
        if (s < lo) lo = s;
        if (s + ph->p_memsz > hi) hi = s + ph->p_memsz;
    }
    if (hi == 0) return 0;
    image.start = lo;
    image.end = hi;
    find_build_id(info, &image);
    ctx->callback(&image, ctx->context);
    return 0;
}

uint64_t stallcap_for_each_image(void (*callback)(const stallcap_image *, void *), void *context) {
    struct iterate_context ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.callback = callback;
    ctx.context = context;
    ssize_t len = readlink("/proc/self/exe", ctx.exe, sizeof ctx.exe - 1);
    ctx.exe[len > 0 ? len : 0] = '\0';
    dl_iterate_phdr(visit, &ctx);
    return ctx.adds;
}

uint64_t stallcap_image_generation(void) {
    struct iterate_context ctx;
    memset(&ctx, 0, sizeof ctx);
    dl_iterate_phdr(visit, &ctx);
    return ctx.adds;
}

uint64_t stallcap_vdso_address(void) { return (uint64_t)getauxval(AT_SYSINFO_EHDR); }
