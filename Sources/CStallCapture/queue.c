// Which queued block a sampled thread is running: a sample's "turn". A thread that drains a dispatch queue calls
// each block from a libdispatch frame (the drain, or `_dispatch_call_block_and_release` for a block) that stays
// suspended while the block runs, and that frame's callee-saved registers are the drain's own state for this
// block (the continuation it runs, the next one): they cannot change until the block returns, and the drain must
// keep something of the current block in them (or on its frame) to go on. So a hash of that frame's pc, stack
// pointer and callee-saved registers, recovered by the handler's unwinder from the frames' CFI, is the same in
// every sample of one block and differs from block to block. Which frame: walking out from the leaf, the last
// libdispatch frame entered from code outside libdispatch (the outermost such edge, so that a block that itself
// calls into libdispatch and back still counts once). Without a register the CFI recovers there (a frame walked by
// its frame pointer on the way), the turn is unknown: 0, never a guess.
#include "unwind.h"
#include "stallcapture.h"
#include "stallcapture_watchdog.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>

// libdispatch's code, [lo, hi); 0 when not set. Written once before sampling starts, read in the handler.
static _Atomic uintptr_t g_queue_lo = 0, g_queue_hi = 0;

typedef struct {
    uintptr_t address, lo, hi;
    int main_program;
} code_search;

// Finds the object one of whose segments holds `address`, and its executable segment.
static int visit(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    code_search *search = data;
    int holds = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && search->address >= lo && search->address < lo + ph->p_memsz) holds = 1;
    }
    if (!holds) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        search->lo = info->dlpi_addr + ph->p_vaddr;
        search->hi = search->lo + ph->p_memsz;
    }
    search->main_program = info->dlpi_name == NULL || info->dlpi_name[0] == '\0';
    return 1;
}

int stallcap_object_code(const void *address, uintptr_t *lo, uintptr_t *hi) {
    if (address == NULL) return ENOENT;
    code_search search = {(uintptr_t)address, 0, 0, 0};
    if (dl_iterate_phdr(visit, &search) == 0 || search.hi == 0) return ENOENT;
    // Linked into the executable (a static Swift standard library): the app's code is in the same range, and
    // an edge into the object cannot be told from a call inside the app.
    if (search.main_program) return ENOTSUP;
    *lo = search.lo;
    *hi = search.hi;
    return 0;
}

int stallcap_set_queue_code(void) {
    // A data symbol, not a function: sanitizers define functions of the same names as libdispatch's (ThreadSanitizer
    // intercepts dispatch_async_f), never its main queue.
    uintptr_t lo = 0, hi = 0;
    int error = stallcap_object_code(dlsym(RTLD_DEFAULT, "_dispatch_main_q"), &lo, &hi);
    if (error != 0) return error;
    atomic_store_explicit(&g_queue_hi, 0, memory_order_relaxed);
    atomic_store_explicit(&g_queue_lo, lo, memory_order_relaxed);
    atomic_store_explicit(&g_queue_hi, hi, memory_order_release);
    return 0;
}

int stallcap_queue_code_set(void) { return atomic_load_explicit(&g_queue_hi, memory_order_acquire) != 0; }

int stallcap_queue_code_holds(uintptr_t pc) {
    uintptr_t hi = atomic_load_explicit(&g_queue_hi, memory_order_acquire);
    return hi != 0 && pc >= atomic_load_explicit(&g_queue_lo, memory_order_relaxed) && pc < hi;
}

void stallcap_turn_trace_begin(stallcap_turn_trace *trace, const walk *w) {
    trace->valid0 = 0;
    for (int k = 0; k < EH_NSAVED; k++) {
        trace->regs0[k] = w->regs[eh_saved_regs[k]];
        if (w->valid & (1ull << eh_saved_regs[k])) trace->valid0 |= 1ull << k;
    }
    trace->lo = w->lo;
    trace->hi = w->hi;
    trace->steps = 0;
    trace->edge = 0;
}

void stallcap_turn_trace_step(stallcap_turn_trace *trace, uintptr_t cfa, const eh_rule *saved) {
    if (trace->steps >= STALLCAP_MAX_FRAMES) return;
    uint32_t j = trace->steps++;
    trace->cfa[j] = cfa;
    for (int k = 0; k < EH_NSAVED; k++) trace->slot[j][k] = saved == NULL ? INT8_MIN : stallcap_saved_slot(&saved[k]);
}

void stallcap_turn_trace_edge(stallcap_turn_trace *trace, const walk *w, uint32_t index) {
    trace->edge = index;
    trace->edge_pc = w->pc;
    trace->edge_sp = w->regs[EH_SP];
    trace->edge_fp = w->regs[EH_FP];
    trace->edge_fp_known = (w->valid >> EH_FP) & 1;
}

// Not instrumented by AddressSanitizer, as unwind.c's loads: the slots are in frames that are not this function's.
__attribute__((no_sanitize("address"))) static int load_slot(const stallcap_turn_trace *trace, uintptr_t address,
                                                              uintptr_t *value) {
    if (address < trace->lo || address > trace->hi - sizeof(uintptr_t) || (address & (sizeof(uintptr_t) - 1))) return -1;
    *value = *(const volatile uintptr_t *)address;
    return 0;
}

uint64_t stallcap_turn_of(const stallcap_turn_trace *trace) {
    uint32_t edge = trace->edge;
    if (edge == 0 || edge > trace->steps || !trace->edge_fp_known || trace->hi == 0) return 0;
    uintptr_t words[EH_NSAVED + 3] = {trace->edge_pc, trace->edge_sp, trace->edge_fp};
    for (int k = 0; k < EH_NSAVED; k++) {
        // The edge frame's value: saved by the nearest frame below it that saved it, else the interrupted one's.
        uint32_t j = edge;
        while (j > 0 && trace->slot[j - 1][k] == 0) j--;
        if (j == 0) {
            if (!(trace->valid0 & (1ull << k))) return 0;
            words[k + 3] = trace->regs0[k];
            continue;
        }
        int8_t slot = trace->slot[j - 1][k];
        uintptr_t address = trace->cfa[j - 1] + (uintptr_t)((intptr_t)slot * (intptr_t)sizeof(uintptr_t));
        if (slot == INT8_MIN || load_slot(trace, address, &words[k + 3]) != 0) return 0;
    }
    uint64_t hash = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        hash ^= (uint64_t)words[i];
        hash *= 0xbf58476d1ce4e5b9ull;
        hash ^= hash >> 31;
    }
    return hash != 0 ? hash : 1;
}
