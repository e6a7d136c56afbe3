// The scan of a sleeping thread's stack memory (where the unwind-information walk of memwalk.c stops, or on a
// machine it does not cover): the leaf is the PC given (the one /proc reports, or that walk's last); return addresses are found by scanning words above the stack pointer (each must point into an
// executable mapping just after a call instruction) up to the first frame record (saved frame pointer, return
// address), whose chain is then followed strictly upward. Memory is only ever read with process_vm_readv, so a
// stale or unmapped address costs a failed read, never a fault. Watchdog thread only; never signal context.
#include "codemap.h"
#include "memwalk.h"
#include "stallcapture_probe.h"
#include "calltarget.h"

typedef struct {
    const stallcap_code_map *map;
    uint64_t stack_end;
    uintptr_t *frames;
    uint32_t max_frames;
    uint32_t count;
    uint32_t flags;
    uint32_t first_scanned;  // the index of the first frame the scan may drop: 1, or 0 when the leaf is a caller too
} walk;

static int add_frame(walk *w, uint64_t address, uint32_t flag) {
    if (w->count == w->max_frames) {
        w->flags |= STALLCAP_MEMSTACK_TRUNCATED;
        return 0;
    }
    w->frames[w->count++] = (uintptr_t)address;
    w->flags |= flag;
    return 1;
}

// True when `record` holds (saved fp, return address), the saved fp points higher up the stack, and the chain
// goes on one more step or ends there with 0.
static int confirmed_record(const walk *w, uint64_t record) {
    uint64_t pair[2], next[2];
    if (record % 16 != 0 || record + 16 > w->stack_end) return 0;
    if (stallcap_read_memory(record, pair, sizeof pair) != 0) return 0;
    if (!stallcap_plausible_return(w->map, pair[1])) return 0;
    if (pair[0] <= record || pair[0] % 8 != 0 || pair[0] + 16 > w->stack_end) return 0;
    if (stallcap_read_memory(pair[0], next, sizeof next) != 0) return 0;
    return next[0] == 0 || (next[0] > pair[0] && stallcap_plausible_return(w->map, next[1]));
}

// True when the call before `return_address` has a known target that contains `inner`.
static int known_call_reaches(uint64_t return_address, uint64_t inner) {
    uint64_t target = 0;
    return stallcap_call_target(return_address, &target) == 1 && stallcap_target_reaches(target, inner);
}

// A scanned word is taken as a return address when it points after a call in executable code and that call
// can have led to the frame below (the last one added): stale words in a frame's locals mostly fail this.
// `strict` also refuses calls whose target is not known (indirect calls).
static int scanned_return(const walk *w, uint64_t word, int strict) {
    if (!stallcap_plausible_return(w->map, word)) return 0;
    uint64_t inner = w->frames[w->count - 1];
    return strict ? known_call_reaches(word, inner) : stallcap_call_reaches(word, inner);
}

// Adds the return addresses among the words in [from, to), strictly checked.
static int scan_words(walk *w, uint64_t from, uint64_t to) {
    uint64_t chunk[512];
    for (uint64_t at = from; at < to;) {
        size_t bytes = (size_t)(to - at) < sizeof chunk ? (size_t)(to - at) : sizeof chunk;
        if (stallcap_read_memory(at, chunk, bytes) != 0) return 0;
        for (size_t i = 0; i < bytes / 8; i++) {
            if (scanned_return(w, chunk[i], 1) && !add_frame(w, chunk[i], STALLCAP_MEMSTACK_SCANNED)) return 0;
        }
        at += bytes;
    }
    return 1;
}

// The first frame record's return address `caller` calls a known function: when one of the scanned frames (or the
// leaf, when it is a return address the unwind-information walk found) lies in it, that frame is the callee's and
// the scanned words found after it were stale words in its frame: drop them.
static void prune_to_caller(walk *w, uint64_t caller) {
    uint64_t target = 0;
    if (stallcap_call_target(caller, &target) != 1) return;
    for (uint32_t k = w->count; k-- > w->first_scanned;) {
        if (w->frames[k] >= target && w->frames[k] - target < STALLCAP_MAX_FUNCTION_BYTES) {
            w->count = k + 1;
            return;
        }
    }
}

// Most bytes scanned above the last frame record of the chain for the outermost frames, which have no frame
// pointer (`__libc_start_main` and `_start` above `main`), so that a stack read from memory has the same root as
// one the capture handler unwinds.
#define OUTERMOST_SCAN_BYTES 4096u

// Follows the frame-pointer chain from `record`, strictly upward, within the stack; where it ends, scans the
// words just above the last record (strictly checked) for the outermost frames.
static void follow_chain(walk *w, uint64_t record) {
    uint64_t last = 0;
    while (record != 0 && record % 8 == 0 && record + 16 <= w->stack_end) {
        uint64_t pair[2];
        if (stallcap_read_memory(record, pair, sizeof pair) != 0) break;
        if (!stallcap_plausible_return(w->map, pair[1])) break;
        if (!add_frame(w, pair[1], STALLCAP_MEMSTACK_CHAIN)) return;
        last = record;
        if (pair[0] <= record) break;
        record = pair[0];
    }
    if (last == 0) return;
    uint64_t from = last + 16;
    uint64_t to = w->stack_end - from < OUTERMOST_SCAN_BYTES ? w->stack_end : from + OUTERMOST_SCAN_BYTES;
    if (from < to) scan_words(w, from, to);
}

uint32_t stallcap_scan_stack(const stallcap_code_map *map, uint64_t pc, int pc_returns, uint64_t sp,
                             uint64_t stack_end, uint32_t max_scan_bytes, uintptr_t *frames, uint32_t max_frames,
                             uint32_t *flags) {
    *flags = 0;
    if (max_frames == 0) return 0;
    walk w = {.map = map, .stack_end = stack_end, .frames = frames, .max_frames = max_frames,
              .first_scanned = pc_returns ? 0 : 1};
    add_frame(&w, pc, 0);
    sp = (sp + 7) & ~(uint64_t)7;
    if (sp == 0 || stack_end <= sp) {
        *flags = w.flags;
        return w.count;
    }
    if (max_scan_bytes > STALLCAP_MAX_SCAN_BYTES) max_scan_bytes = STALLCAP_MAX_SCAN_BYTES;
    uint64_t scan_end = stack_end - sp < max_scan_bytes ? stack_end : sp + max_scan_bytes;
    uint64_t chunk[512];
    uint64_t previous = 0;  // the word before the current one: a frame record is (previous, current)
    for (uint64_t at = sp; at < scan_end;) {
        size_t bytes = (size_t)(scan_end - at) < sizeof chunk ? (size_t)(scan_end - at) : sizeof chunk;
        if (stallcap_read_memory(at, chunk, bytes) != 0) break;
        for (size_t i = 0; i < bytes / 8; i++) {
            uint64_t address = at + i * 8;
            if (stallcap_plausible_return(map, chunk[i])) {
                uint64_t record = address - 8;
                if (address > sp && confirmed_record(&w, record)) {
                    prune_to_caller(&w, chunk[i]);
                    // The first frame record. When the function it returns into keeps a frame pointer, the record
                    // it points to is that function's own (its return address's call leads into it) and the
                    // words between are its locals. Otherwise frames without frame pointers may lie between:
                    // that gap is scanned (strictly), then the chain is followed.
                    if (add_frame(&w, chunk[i], STALLCAP_MEMSTACK_CHAIN)) {
                        uint64_t next[2] = {0, 0};
                        int direct = stallcap_read_memory(previous, next, sizeof next) == 0 &&
                                     known_call_reaches(next[1], chunk[i]);
                        uint64_t gap_end = previous < scan_end ? previous : scan_end;
                        if (direct || scan_words(&w, address + 8, gap_end)) follow_chain(&w, previous);
                    }
                    *flags = w.flags;
                    return w.count;
                }
                if (scanned_return(&w, chunk[i], 0) && !add_frame(&w, chunk[i], STALLCAP_MEMSTACK_SCANNED)) break;
            }
            previous = chunk[i];
        }
        if (w.flags & STALLCAP_MEMSTACK_TRUNCATED) break;
        at += bytes;
    }
    *flags = w.flags;
    return w.count;
}
