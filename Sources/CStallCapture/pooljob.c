// The code that tells a libdispatch worker running work from an idle one (PoolThreads.swift): libdispatch's and
// the C library's. A worker runs work (a Swift job of the cooperative pool, or a `DispatchQueue.global()` block)
// when its stack has a frame of libdispatch that called code outside both: the job's or the block's. An idle
// worker's libdispatch frames call only the C library (its wait for work). Called on an app thread, when the app
// makes its pool target: dlsym and dl_iterate_phdr take the loader's lock, which the watchdog never waits on.
#include "stallcapture_watchdog.h"

#include <dlfcn.h>
#include <errno.h>

int stallcap_worker_code(stallcap_worker_code_t *code) {
    // Symbols no sanitizer defines in the executable (they intercept libdispatch's and libc's calls): the main
    // queue, a data symbol, and gnu_get_libc_version.
    int error = stallcap_object_code(dlsym(RTLD_DEFAULT, "_dispatch_main_q"), &code->dispatch_lo, &code->dispatch_hi);
    if (error != 0) return error;
    return stallcap_object_code(dlsym(RTLD_DEFAULT, "gnu_get_libc_version"), &code->libc_lo, &code->libc_hi);
}
