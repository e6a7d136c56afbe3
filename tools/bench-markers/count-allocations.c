// Preloaded by tools/bench-markers.sh (not part of any product): counts the calling thread's heap allocations,
// so stallprof-bench-markers can check that a marker call allocates nothing on the app's thread.
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t count, size_t size);
void *__libc_realloc(void *pointer, size_t size);
void *__libc_memalign(size_t alignment, size_t size);

static __thread __attribute__((tls_model("initial-exec"))) unsigned long stallcap_allocations;

void *malloc(size_t size) { stallcap_allocations++; return __libc_malloc(size); }
void *calloc(size_t count, size_t size) { stallcap_allocations++; return __libc_calloc(count, size); }
void *realloc(void *pointer, size_t size) { stallcap_allocations++; return __libc_realloc(pointer, size); }
void *memalign(size_t alignment, size_t size) { stallcap_allocations++; return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { stallcap_allocations++; return __libc_memalign(alignment, size); }
int posix_memalign(void **out, size_t alignment, size_t size) {
    stallcap_allocations++;
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL) return ENOMEM;
    *out = pointer;
    return 0;
}

/// Heap allocations the calling thread made so far.
unsigned long stallprof_thread_allocations(void) { return stallcap_allocations; }
