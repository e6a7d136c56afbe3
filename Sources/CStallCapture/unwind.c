// The handler's stack walk: from the interrupted context, one frame at a time, with the rules ehframe.c finds (or
// a cache of them), and frame pointers where an address has no unwind information. Reads of the thread's stack
// stay inside its bounds (recorded by stallcap_unwind_prepare_thread outside any handler): no system call, no lock,
// no allocation, nothing that can fault on a stack the unwind information describes wrongly.
#include "unwind.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <ucontext.h>

/// Without known bounds (a thread that never ran stallcap_unwind_prepare_thread, such as a lock's owner), reads
/// stay within this distance above the interrupted stack pointer, and below the thread's descriptor (see
/// unknown_stack_end); no frame pointer is followed.
#define UNKNOWN_STACK_SPAN (8u << 20)

// The sampled thread's stack and alternate signal stack, [lo, hi); 0 when unknown. Initial-exec TLS: reading
// them in a handler never allocates.
static __thread __attribute__((tls_model("initial-exec"))) uintptr_t t_stack_lo, t_stack_hi, t_alt_lo, t_alt_hi;

// Not instrumented by AddressSanitizer: the walk reads stack slots of frames that are not its own (bounds checked
// here), which the sanitizer could take for an overflow and end the app over.
__attribute__((no_sanitize("address"))) static int load(const void *context, uintptr_t address, uintptr_t *value) {
    const walk *w = context;
    if (address < w->lo || address > w->hi - sizeof(uintptr_t) || (address & (sizeof(uintptr_t) - 1))) return -1;
    if (w->memory != NULL) return stallcap_window_load(w->memory, address, value);
    *value = *(const volatile uintptr_t *)address;
    return 0;
}

/// Below a frame's stack pointer, the slots its function has just popped (an interrupted epilogue: after `pop rbp`
/// the rule for rbp still names its slot, now below rsp) and the x86_64 red zone.
#define BELOW_SP 128

/// The end of the readable region of a thread of unknown bounds whose first frame's stack pointer is `sp`. glibc
/// puts a thread's descriptor (`struct pthread`, with the static TLS below it on x86_64) at the top of the stack
/// block it maps for the thread, or of the stack the app gave it: from `sp` up to the descriptor is one mapping, and
/// above it may lie another thread's guard page. A descriptor below `sp` or far above it (the main thread's, a
/// thread on a stack of its own making) says nothing: then the guess of UNKNOWN_STACK_SPAN. `pthread_self` reads the
/// thread pointer: no system call, no lock.
static uintptr_t unknown_stack_end(uintptr_t sp) {
    uintptr_t self = (uintptr_t)pthread_self(), end = sp + UNKNOWN_STACK_SPAN;
    if (self > sp && self < end) end = self & ~(uintptr_t)(sizeof(uintptr_t) - 1);
    return end;
}

/// Sets `w`'s readable region for stack pointer `sp`: from just below sp up to the end of the stack that holds it.
/// On a thread of unknown bounds, the first frame's stack pointer starts a guessed span, and later frames must stay
/// inside it. Returns -1 (and leaves `w` alone) when `sp` is on no stack of the thread's.
static int enter_region(walk *w, uintptr_t sp) {
    uintptr_t lo = sp - BELOW_SP, hi;
    if (w->memory != NULL) {  // another thread's stack, read from memory: its bounds were given
        if (sp < w->sp0 || sp >= w->hi) return -1;
        w->lo = lo;
        return 0;
    }
    if (t_stack_hi != 0 && sp >= t_stack_lo && sp < t_stack_hi) {
        hi = t_stack_hi;
        if (lo < t_stack_lo) lo = t_stack_lo;
    } else if (t_alt_hi != 0 && sp >= t_alt_lo && sp < t_alt_hi) {
        hi = t_alt_hi;
        if (lo < t_alt_lo) lo = t_alt_lo;
    } else if (w->bounded) return -1;  // on no stack of the thread's (a coroutine's?): not followed
    else if (w->hi == 0) hi = unknown_stack_end(sp);
    else if (sp >= w->sp0 && sp < w->hi) hi = w->hi;
    else return -1;
    w->lo = lo;
    w->hi = hi;
    return 0;
}

static void from_context(walk *w, const ucontext_t *uc) {
    memset(w, 0, sizeof *w);
#if defined(__x86_64__)
    static const int gregs[EH_NREGS] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP,
                                        REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15,
                                        REG_RIP};
    for (int i = 0; i < EH_NREGS; i++) w->regs[i] = (uintptr_t)uc->uc_mcontext.gregs[gregs[i]];
    w->pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#else
    for (int i = 0; i < 31; i++) w->regs[i] = (uintptr_t)uc->uc_mcontext.regs[i];
    w->regs[EH_SP] = (uintptr_t)uc->uc_mcontext.sp;
    w->pc = (uintptr_t)uc->uc_mcontext.pc;
#endif
    w->valid = (1ull << EH_NREGS) - 1;
    w->exact = 1;
    w->bounded = t_stack_hi != 0;
}

/// The value of a register of the caller by `rule`; 0 when found, 1 when not recoverable, -1 on a bad read.
static int recover(walk *w, const eh_rule *rule, int reg, uintptr_t cfa, uintptr_t *value) {
    uintptr_t address;
    switch (rule->kind) {
    case EH_RULE_SAME:
        if (!(w->valid & (1ull << reg))) return 1;
        *value = w->regs[reg];
        return 0;
    case EH_RULE_UNDEF: return 1;
    case EH_RULE_OFFSET: return load(w, cfa + (uintptr_t)rule->offset, value);
    case EH_RULE_VAL_OFFSET: *value = cfa + (uintptr_t)rule->offset; return 0;
    case EH_RULE_REGISTER:
        if (!(w->valid & (1ull << rule->offset))) return 1;
        *value = w->regs[rule->offset];
        return 0;
    case EH_RULE_EXPR:
        if (eh_evaluate(rule->expr, rule->expr_length, w->regs, w->valid, 1, cfa, load, w, &address) != 0) return -1;
        return load(w, address, value);
    case EH_RULE_VAL_EXPR:
        return eh_evaluate(rule->expr, rule->expr_length, w->regs, w->valid, 1, cfa, load, w, value) != 0 ? -1 : 0;
    }
    return -1;
}

static uintptr_t strip_pac(uintptr_t address) {
#if defined(__aarch64__)
    register uintptr_t x30 __asm__("x30") = address;
    __asm__("hint #7" : "+r"(x30));  // xpaclri: removes a pointer authentication code (a no-op without PAC)
    return x30;
#else
    return address;
#endif
}

int stallcap_unwind_apply(walk *w, const eh_step *row) {
    uintptr_t cfa;
    if (row->cfa_is_expr) {
        if (eh_evaluate(row->cfa_expr, row->cfa_expr_length, w->regs, w->valid, 0, 0, load, w, &cfa) != 0) return -1;
    } else {
        if (row->cfa_reg >= EH_NREGS || !(w->valid & (1ull << row->cfa_reg))) return -1;
        cfa = w->regs[row->cfa_reg] + (uintptr_t)row->cfa_offset;
    }
    uintptr_t ra, fp, sp = cfa;
    int r = recover(w, &row->ra, EH_RA, cfa, &ra);
    if (r != 0) return r > 0 ? 0 : -1;  // an undefined return address marks the outermost frame (_start, clone)
    if (row->sp.kind != EH_RULE_SAME && recover(w, &row->sp, EH_SP, cfa, &sp) != 0) return -1;
    int have_fp = recover(w, &row->fp, EH_FP, cfa, &fp);
    if (have_fp < 0) return -1;
    if (row->ra_signed) ra = strip_pac(ra);
    if (ra == 0) return 0;
    // A caller's frame lies above its callee's; only a frame that was interrupted (not called) may have none.
    if (!row->signal_frame && (sp < w->regs[EH_SP] || (sp == w->regs[EH_SP] && !w->exact))) return -1;
    if (enter_region(w, sp) != 0) return -1;
    if (w->trace != NULL) stallcap_turn_trace_step(w->trace, cfa, row->saved);
    w->valid = (1ull << EH_SP) | (have_fp == 0 ? 1ull << EH_FP : 0);
#if defined(__aarch64__)
    w->valid |= 1ull << EH_RA;  // the caller's lr is the return address just recovered
    w->regs[EH_RA] = ra;
#endif
    w->regs[EH_SP] = sp;
    w->regs[EH_FP] = fp;
    w->pc = ra;
    w->exact = row->signal_frame;  // after a signal frame, the pc was interrupted, not called
    return 1;
}

/// Moves `w` to the caller through the frame pointer, for code without (usable) unwind information: only on a
/// thread whose stack bounds are known, and only up the stack. The frame record is {caller's fp, return address};
/// on x86_64 the caller's stack pointer is just above it, on aarch64 it is unknown (later rules that need it fail,
/// and frame pointers are followed on).
static int frame_pointer_step(walk *w) {
    if (!w->bounded || !(w->valid & (1ull << EH_FP))) return -1;
    uintptr_t fp = w->regs[EH_FP], caller_fp, ra;
    if (fp == 0) return 0;  // the end of the chain of frame records (a thread's outermost frame zeroes it)
    if (fp < w->regs[EH_SP] || load(w, fp, &caller_fp) != 0 || load(w, fp + sizeof(uintptr_t), &ra) != 0) return -1;
    if (ra == 0) return 0;
    uintptr_t sp = fp + 2 * sizeof(uintptr_t);
    if (enter_region(w, sp) != 0) return -1;
    if (w->trace != NULL) stallcap_turn_trace_step(w->trace, sp, NULL);  // no rules: saved registers unknown
    w->regs[EH_SP] = sp;
    w->regs[EH_FP] = caller_fp;
#if defined(__x86_64__)
    w->valid = (1ull << EH_SP) | (1ull << EH_FP);
#else
    w->valid = 1ull << EH_FP;
#endif
    w->pc = strip_pac(ra);
    w->exact = 0;
    return 1;
}

uint32_t stallcap_unwind(const void *context, uintptr_t *frames, uint32_t max_frames, uint32_t *flags,
                         stallcap_unwind_cache *cache, stallcap_turn_trace *trace) {
    walk w;
    from_context(&w, context);
    w.sp0 = w.regs[EH_SP];
    (void)enter_region(&w, w.sp0);  // on no stack the thread is known to have, w.hi stays 0: only the pc is recorded
    uint32_t n = 0;
    int outside_queue_before = 0;
    w.trace = trace != NULL && stallcap_queue_code_set() ? trace : NULL;
    if (w.trace != NULL) *flags |= STALLCAP_FLAG_QUEUE_CODE_KNOWN;
    if (trace != NULL) stallcap_turn_trace_begin(trace, &w);
    if (cache != NULL) stallcap_unwind_cache_begin(cache);
    eh_row row;
    eh_step step;
    // The object of the latest lookup: callers are mostly in the same one, and asking the loader again for an address
    // in its range would give the same answer (one walk lasts microseconds).
    eh_image image = {EH_NO_IMAGE, 0, 0};
    for (;;) {
        if (n == max_frames) {
            *flags |= STALLCAP_FLAG_TRUNCATED;
            break;
        }
        frames[n++] = w.pc;
        if (w.trace != NULL) {  // an edge into libdispatch from outside it: the latest (outermost) one is the turn's
            int in_queue = stallcap_queue_code_holds(w.pc);
            if (in_queue && n > 1 && outside_queue_before) stallcap_turn_trace_edge(w.trace, &w, n - 1);
            outside_queue_before = !in_queue;
        }
        if (w.hi == 0) {  // a stack the thread is not known to have: its words are not read
            *flags |= STALLCAP_FLAG_STOPPED_UNUSABLE;
            break;
        }
        uintptr_t lookup = w.exact ? w.pc : w.pc - 1;
#if defined(__x86_64__)
        w.regs[EH_RA] = w.pc;  // DW_OP_breg16 (rip) in PLT entries' CFA
        w.valid |= 1ull << EH_RA;
#endif
        int moved = -1, no_info = 1;
        stallcap_unwind_entry *entry = cache != NULL ? stallcap_unwind_cache_slot(cache, lookup) : NULL;
        int hit = entry != NULL && entry->key == lookup && lookup != 0;
        // A cached step only while its address lies in the same object: another may have been loaded there since.
        if (hit && !(lookup >= image.lo && lookup < image.hi)) eh_image_of(lookup, &image);
        if (hit && entry->image == image.tag) {
            if (entry->ra_kind != STALLCAP_UNWIND_NO_INFO) {
                no_info = 0;
                stallcap_unwind_cache_step(entry, &step);
                moved = stallcap_unwind_apply(&w, &step);
            }
        } else {
            int found = eh_find_row(lookup, &row, &image);
            if (entry != NULL) stallcap_unwind_cache_store(entry, lookup, image.tag, found, &row);
            if (found == EH_FOUND) {
                no_info = 0;
                eh_step_of_row(&row, &step);
                moved = stallcap_unwind_apply(&w, &step);
            }
        }
        if (moved < 0) {  // no unwind information, or none that works here: the frame pointer, if it can
            moved = frame_pointer_step(&w);
            if (moved > 0) *flags |= STALLCAP_FLAG_FRAME_POINTERS;
            if (moved < 0) *flags |= no_info ? STALLCAP_FLAG_STOPPED_NO_INFO : STALLCAP_FLAG_STOPPED_UNUSABLE;
        }
        if (moved <= 0) break;
    }
    return n;
}

void stallcap_unwind_prepare_thread(void) {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void *address = NULL;
        size_t size = 0;
        if (pthread_attr_getstack(&attr, &address, &size) == 0 && size > 0) {
            t_stack_lo = (uintptr_t)address;
            t_stack_hi = (uintptr_t)address + size;
        }
        pthread_attr_destroy(&attr);
    }
    stack_t alt;
    if (sigaltstack(NULL, &alt) == 0 && !(alt.ss_flags & SS_DISABLE) && alt.ss_size > 0) {
        t_alt_lo = (uintptr_t)alt.ss_sp;
        t_alt_hi = (uintptr_t)alt.ss_sp + alt.ss_size;
    }
}
