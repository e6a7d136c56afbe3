// ehframe.h: internal to CStallCapture. The signal handler's own DWARF unwinder (no libunwind inside the handler):
// ehframe.c finds a pc's unwind rules in its object's `.eh_frame` (through `_dl_find_object` and the object's
// `.eh_frame_hdr` search table) and runs the CFA program up to that pc; ehexpr.c evaluates DWARF expressions;
// unwind.c walks the stack with them. No system call, no lock, no allocation, reads bounded to the object's
// mapping and the thread's stack: all of it is async-signal-safe.
#ifndef STALLCAPTURE_EHFRAME_H
#define STALLCAPTURE_EHFRAME_H

#include <stdint.h>

// The DWARF registers the unwinder tracks, per architecture: enough for every CFA rule it meets (frame 0 has
// them all, from the signal context), the stack and frame pointers and the return address column.
#if defined(__x86_64__)
#define EH_NREGS 17  // rax rdx rcx rbx rsi rdi rbp rsp r8-r15, and 16: the return address (rip)
#define EH_SP 7
#define EH_FP 6
#define EH_RA 16
#define EH_NSAVED 5  // the callee-saved registers besides rbp: rbx r12 r13 r14 r15
#define EH_SAVED_REGS {3, 12, 13, 14, 15}
#elif defined(__aarch64__)
#define EH_NREGS 32  // x0-x30 and 31: sp; the return address is x30 (lr)
#define EH_SP 31
#define EH_FP 29
#define EH_RA 30
#define EH_NSAVED 10  // the callee-saved registers besides x29 (the frame pointer): x19-x28
#define EH_SAVED_REGS {19, 20, 21, 22, 23, 24, 25, 26, 27, 28}
#else
#error "stallprof's unwinder supports x86_64 and aarch64 Linux"
#endif

/// How a register of the caller is recovered (DWARF call frame information, section 6.4.1).
enum {
    EH_RULE_SAME = 0,    // unchanged (also the rule of registers the CFI does not mention)
    EH_RULE_UNDEF,       // not recoverable; for the return address: the outermost frame
    EH_RULE_OFFSET,      // saved at CFA + offset
    EH_RULE_VAL_OFFSET,  // the value CFA + offset
    EH_RULE_REGISTER,    // in register `offset`
    EH_RULE_EXPR,        // saved at the address the expression computes (CFA pushed first)
    EH_RULE_VAL_EXPR,    // the value the expression computes (CFA pushed first)
};

typedef struct {
    uint8_t kind;          // EH_RULE_*
    uint32_t expr_length;  // EH_RULE_EXPR, EH_RULE_VAL_EXPR
    int64_t offset;        // EH_RULE_OFFSET, EH_RULE_VAL_OFFSET; the register for EH_RULE_REGISTER
    const uint8_t *expr;
} eh_rule;

/// The unwind rules in effect at one pc (one row of the CFI table).
typedef struct {
    uint8_t cfa_is_expr;      // the CFA is computed by cfa_expr, else cfa_reg + cfa_offset
    uint8_t signal_frame;     // the CIE has 'S': the caller's pc is exact, not a return address
    uint8_t ra_signed;        // aarch64: the return address carries a pointer authentication code
    uint16_t cfa_reg;
    uint32_t cfa_expr_length;
    int64_t cfa_offset;
    const uint8_t *cfa_expr;
    uintptr_t start;  // the first address the FDE covers (the function's start, or its part's)
    eh_rule rules[EH_NREGS];
} eh_row;

/// The DWARF numbers of the callee-saved registers (EH_SAVED_REGS), in the order of eh_step's `saved`.
static const int eh_saved_regs[EH_NSAVED] = EH_SAVED_REGS;

/// The part of a row one step uses: the CFA, how the return address, stack and frame pointers come back, and the
/// other callee-saved registers (kept so that a frame's own values of them are known: queue.c reads them).
typedef struct {
    uint8_t cfa_is_expr, signal_frame, ra_signed;
    uint16_t cfa_reg;
    uint32_t cfa_expr_length;
    int64_t cfa_offset;
    const uint8_t *cfa_expr;
    eh_rule ra, sp, fp;
    eh_rule saved[EH_NSAVED];
} eh_step;

/// The step `row` describes.
static inline void eh_step_of_row(const eh_row *row, eh_step *step) {
    step->cfa_is_expr = row->cfa_is_expr;
    step->signal_frame = row->signal_frame;
    step->ra_signed = row->ra_signed;
    step->cfa_reg = row->cfa_reg;
    step->cfa_expr_length = row->cfa_expr_length;
    step->cfa_offset = row->cfa_offset;
    step->cfa_expr = row->cfa_expr;
    step->ra = row->rules[EH_RA];
    step->sp = row->rules[EH_SP];
    step->fp = row->rules[EH_FP];
    for (int k = 0; k < EH_NSAVED; k++) step->saved[k] = row->rules[eh_saved_regs[k]];
}

/// What eh_find_row found.
enum { EH_FOUND = 0, EH_NO_INFO = 1, EH_BAD = 2 };

/// The loaded object that holds an address, as far as the handler's cache needs it: `tag` mixes its mapping, unwind
/// table and loader record into one word (never 0), EH_NO_IMAGE for an address no object holds; it maps [lo, hi)
/// (empty for none). Rules found for an address hold while its object's tag stays the same: a library unloaded and
/// another loaded at its address changes it (unless the new one has the same mapping, table address and record).
typedef struct {
    uintptr_t tag, lo, hi;
} eh_image;

/// `tag` of an address no loaded object holds.
#define EH_NO_IMAGE 1

/// Finds the rules in effect at `pc` (an exact instruction address: a return address less one). EH_NO_INFO when
/// no loaded object has unwind information for `pc` (JIT code, an object without `.eh_frame_hdr`); EH_BAD when the
/// information is malformed or uses something this reader does not support. Sets `*image` as eh_image_of does.
__attribute__((visibility("hidden"))) int eh_find_row(uintptr_t pc, eh_row *row, eh_image *image);

/// The object that holds `pc`.
__attribute__((visibility("hidden"))) void eh_image_of(uintptr_t pc, eh_image *image);

/// Reads one word of the sampled thread's memory for the expression evaluator: 0 when `address` is in bounds.
typedef int (*eh_load_fn)(const void *context, uintptr_t address, uintptr_t *value);

/// Evaluates a DWARF expression (the subset CFI uses: constants, register-relative values, arithmetic,
/// comparisons, branches, dereferences through `load`). `regs` holds the current frame's registers, `valid` a bit
/// per known register; `push_cfa` pushes `cfa` first (DW_CFA_expression, DW_CFA_val_expression). Returns 0 with
/// the value on top of the stack in `*result`, or -1.
__attribute__((visibility("hidden"))) int eh_evaluate(const uint8_t *expr, uint32_t length, const uintptr_t *regs,
                                                      uint64_t valid, int push_cfa, uintptr_t cfa, eh_load_fn load,
                                                      const void *context, uintptr_t *result);

#endif
