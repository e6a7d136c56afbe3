// The window through which a walk of another thread's stack loads its words (memwalk.c walks a sleeping thread's
// stack with the handler's step, unwind.c): a page at a time, read with process_vm_readv, so that a stack unmapped
// meanwhile costs a failed read, not a fault. Watchdog thread only; never signal context.
#include "stallcapture_probe.h"
#include "unwind.h"

int stallcap_window_load(stallcap_stack_window *window, uintptr_t address, uintptr_t *value) {
    uintptr_t base = address & ~(uintptr_t)(sizeof window->words - 1);
    if (base == 0) return -1;
    if (window->base != base) {
        window->base = 0;
        if (stallcap_read_memory(base, window->words, sizeof window->words) != 0) return -1;
        window->base = base;
    }
    *value = window->words[(address - base) / sizeof(uintptr_t)];
    return 0;
}
