// unwind.h: internal to CStallCapture. The signal handler's stack walk (unwind.c) and its cache of unwind rules
// (unwcache.c). See ehframe.h for the rules themselves.
#ifndef STALLCAPTURE_UNWIND_H
#define STALLCAPTURE_UNWIND_H

#include "ehframe.h"
#include "stallcapture.h"

#include <stdint.h>

/// A stack walk's state: the current frame's registers (those known), its pc, and the stack region reads may touch.
typedef struct {
    uintptr_t regs[EH_NREGS];
    uint64_t valid;  // a bit per known register
    uintptr_t pc;
    int exact;         // pc is the interrupted instruction itself, not a return address
    uintptr_t lo, hi;  // the stack region reads may touch: [lo, hi)
    uintptr_t sp0;     // the interrupted stack pointer
    int bounded;       // lo/hi are the thread's real bounds (else a guess: no frame-pointer walks)
    struct stallcap_stack_window *memory;  // another thread's stack, read through this window; NULL: loads in place
    struct stallcap_turn_trace *trace;  // what a sample's turn is found from (queue.c); NULL: not asked
} walk;

/// Copies of another thread's stack words, read with process_vm_readv a page at a time (stackwindow.c): a walk of a
/// sleeping thread's stack loads through it, so that a stack unmapped meanwhile costs a failed read, not a fault.
typedef struct stallcap_stack_window {
    uintptr_t base;  // the page copied in `words`; 0: none yet
    uintptr_t words[512];
} stallcap_stack_window;

/// Loads the word at `address` (8-aligned) through `window`: 0, or -1 when the memory cannot be read.
__attribute__((visibility("hidden"))) int stallcap_window_load(stallcap_stack_window *window, uintptr_t address,
                                                               uintptr_t *value);

/// Moves `w` to the caller with `row`'s rules. 1: moved; 0: the outermost frame; -1: cannot go on.
__attribute__((visibility("hidden"))) int stallcap_unwind_apply(walk *w, const eh_step *row);

/// Cached rules of one lookup address (40 bytes on x86_64, 48 on aarch64). Only the plainest steps are kept: the
/// CFA at the stack or frame pointer plus an offset, the return address and the frame pointer at offsets from it
/// (or unchanged, or undefined), the stack pointer the CFA, the other callee-saved registers unchanged or saved at
/// a multiple of the word size from the CFA; others are found again each time.
typedef struct {
    uintptr_t key;    // the lookup address; 0: empty
    uintptr_t image;  // the tag of key's object (eh_image) when the rules were found: used only while it is the same
    int32_t cfa_offset, ra_offset, fp_offset;
    uint8_t cfa_on_fp;  // the CFA is the frame pointer plus cfa_offset, else the stack pointer plus it
    uint8_t ra_kind;    // EH_RULE_* of the return address, or STALLCAP_UNWIND_NO_INFO
    uint8_t fp_kind;    // EH_RULE_* of the frame pointer
    uint8_t ra_signed;
    int8_t saved[EH_NSAVED];  // per callee-saved register: 0 unchanged, else saved at CFA + saved[k] words
} stallcap_unwind_entry;
_Static_assert(sizeof(stallcap_unwind_entry) == (EH_NSAVED == 5 ? 40 : 48), "a cache entry: 40 or 48 bytes");

/// Where `rule` keeps a callee-saved register, as a cache entry or a turn trace keeps it: 0 unchanged, else its
/// slot's offset from the CFA in words; INT8_MIN when it is neither (or too far to fit).
static inline int8_t stallcap_saved_slot(const eh_rule *rule) {
    if (rule->kind == EH_RULE_SAME) return 0;
    int64_t word = (int64_t)sizeof(uintptr_t);
    if (rule->kind != EH_RULE_OFFSET || rule->offset % word != 0 || rule->offset == 0) return INT8_MIN;
    int64_t slot = rule->offset / word;
    return slot > INT8_MIN && slot <= INT8_MAX ? (int8_t)slot : INT8_MIN;
}

/// `ra_kind` of an address no loaded object has unwind information for.
#define STALLCAP_UNWIND_NO_INFO 0xff

/// Entries of the handler's cache: direct-mapped by lookup address, 160 KiB of static memory on x86_64 (192 KiB on
/// aarch64).
#define STALLCAP_UNWIND_CACHE_SIZE 4096

/// A cache of steps by lookup address. Written by one walk at a time (the handler's is used only by the handler that
/// holds the claimed request). An entry is used only while its address lies in the same loaded object
/// (eh_image); the whole cache is emptied when the watchdog sees the loaded images changed
/// (stallcap_unwind_forget_images).
typedef struct stallcap_unwind_cache {
    uint64_t generation;
    stallcap_unwind_entry entries[STALLCAP_UNWIND_CACHE_SIZE];
} stallcap_unwind_cache;

/// Empties `cache` if libraries came or went since it was last used. Once per walk.
__attribute__((visibility("hidden"))) void stallcap_unwind_cache_begin(stallcap_unwind_cache *cache);

/// The entry `lookup` is kept in, or would be.
static inline stallcap_unwind_entry *stallcap_unwind_cache_slot(stallcap_unwind_cache *cache, uintptr_t lookup) {
    return &cache->entries[(size_t)(((uint64_t)lookup * 0x9e3779b97f4a7c15ull) >> 52) &
                           (STALLCAP_UNWIND_CACHE_SIZE - 1)];
}

/// Keeps in `entry` what eh_find_row found for `lookup` (EH_FOUND with `row`, or EH_NO_INFO) and the tag of the
/// `image` it gave, when simple enough.
__attribute__((visibility("hidden"))) void stallcap_unwind_cache_store(stallcap_unwind_entry *entry,
                                                                       uintptr_t lookup, uintptr_t image,
                                                                       int found, const eh_row *row);

/// The step a cached entry (not STALLCAP_UNWIND_NO_INFO) describes.
__attribute__((visibility("hidden"))) void stallcap_unwind_cache_step(const stallcap_unwind_entry *entry,
                                                                      eh_step *step);

/// Walks the stack of the interrupted `context` (a ucontext_t) into `frames`, leaf first: the interrupted
/// instruction, then return addresses. Sets STALLCAP_FLAG_TRUNCATED, STALLCAP_FLAG_FRAME_POINTERS and, when it stops
/// short of the outermost frame, STALLCAP_FLAG_STOPPED_NO_INFO or STALLCAP_FLAG_STOPPED_UNUSABLE in `flags`.
/// `cache` may be NULL. `trace`, unless NULL, gets what the queued block the thread runs is found from
/// (stallcap_turn_of). Async-signal-safe; on the thread the context belongs to (its stack bounds are thread-local).
__attribute__((visibility("hidden"))) uint32_t stallcap_unwind(const void *context, uintptr_t *frames,
                                                               uint32_t max_frames, uint32_t *flags,
                                                               stallcap_unwind_cache *cache,
                                                               struct stallcap_turn_trace *trace);

/// True once stallcap_set_queue_code found libdispatch's code. Async-signal-safe.
__attribute__((visibility("hidden"))) int stallcap_queue_code_set(void);

/// True when `pc` lies in libdispatch's code (stallcap_set_queue_code). Async-signal-safe.
__attribute__((visibility("hidden"))) int stallcap_queue_code_holds(uintptr_t pc);

/// What a walk keeps to find a sample's turn (queue.c) without recovering every frame's callee-saved registers: per
/// step, the CFA and where the callee saved each of them; the first frame's values; the edge frame. Big (3.4 KiB
/// on x86_64, 4.7 KiB on aarch64): the handler's is static.
typedef struct stallcap_turn_trace {
    uintptr_t regs0[EH_NSAVED];  // the interrupted frame's callee-saved registers
    uint64_t valid0;             // a bit per index of regs0 known
    uintptr_t lo, hi;            // the first frame's stack region: saved slots are read only inside it
    uint32_t steps;              // steps recorded: step j moved from frame j to frame j + 1
    uintptr_t cfa[STALLCAP_MAX_FRAMES];
    int8_t slot[STALLCAP_MAX_FRAMES][EH_NSAVED];  // 0 unchanged, INT8_MIN unknown, else saved at cfa + slot words
    uint32_t edge;               // the edge frame's index; 0: none
    uintptr_t edge_pc, edge_sp, edge_fp;
    int edge_fp_known;
} stallcap_turn_trace;

/// Starts `trace` for the walk `w` (its first frame's registers and stack region).
__attribute__((visibility("hidden"))) void stallcap_turn_trace_begin(stallcap_turn_trace *trace, const walk *w);

/// Records a step: the callee's CFA and its rules for the callee-saved registers (NULL: unknown, a frame-pointer
/// step).
__attribute__((visibility("hidden"))) void stallcap_turn_trace_step(stallcap_turn_trace *trace, uintptr_t cfa,
                                                                    const eh_rule *saved);

/// Records that `w`'s current frame, number `index`, is a libdispatch frame entered from outside libdispatch.
__attribute__((visibility("hidden"))) void stallcap_turn_trace_edge(stallcap_turn_trace *trace, const walk *w,
                                                                    uint32_t index);

/// The turn: a hash of the last edge frame's pc, stack and frame pointers and callee-saved registers, recovered
/// from the steps below it; 0 when there is no edge or a register is not known. Async-signal-safe.
__attribute__((visibility("hidden"))) uint64_t stallcap_turn_of(const stallcap_turn_trace *trace);

/// Records the calling thread's stack and alternate signal stack bounds for later walks on it (not in a handler).
__attribute__((visibility("hidden"))) void stallcap_unwind_prepare_thread(void);

#endif
