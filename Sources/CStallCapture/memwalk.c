// A sleeping thread's stack read from its memory the way a debugger walks it: frame by frame with the code's unwind
// information (DWARF CFI, the handler's own reader in ehframe.c), starting from the only registers /proc gives for a
// thread in a system call, the pc and the stack pointer. The others (rbp above all) are in the kernel; a frame's
// rules that need rbp before any deeper frame saved it get it from the function's prologue, or from the first
// frame record above the stack pointer whose return address calls the function (then the stack is marked scanned).
// A function without unwind information is left through the first word above its stack pointer that returns
// after a call leading into it (marked scanned). Where none of this works, the scan of stackscan.c goes on from that
// frame. Every stack word is read with process_vm_readv, a page at a time: nothing here can fault. The thread is
// never touched. Watchdog thread only; never signal context. See docs/WATCHDOG.md, "Stacks read from memory".
#include "codemap.h"
#include "memwalk.h"
#include "stallcapture_probe.h"
#include "calltarget.h"
#include "unwind.h"

#include <string.h>

#if defined(__x86_64__)
/// Room below a frame's stack pointer that rules may read (a slot popped just before the call; the red zone).
#define BELOW_SP 128

/// One walk of a sleeping thread's stack.
typedef struct {
    walk w;                        // the current frame (unwind.c's state; its loads go through `window`)
    stallcap_stack_window window;  // the stack page last read
    const stallcap_code_map *map;  // executable mappings, for the return-address test
    uint64_t search_bytes;         // most bytes above a frame's stack pointer searched for a word
    uint32_t flags;                // STALLCAP_MEMSTACK_*
} memwalk;

// Loads the stack word at `address` (8-aligned, within the stack above the first frame): 0, or -1.
static int stack_word(memwalk *m, uintptr_t address, uintptr_t *value) {
    if (address < m->w.sp0 - BELOW_SP || address > m->w.hi - sizeof(uintptr_t) || address % sizeof(uintptr_t)) return -1;
    return stallcap_window_load(&m->window, address, value);
}

// True when the call before return address `ra` has a known target that leads (through jump thunks) to `inner`; with
// `lenient`, also when its target is unknown (an indirect call).
static int calls_into(const memwalk *m, uintptr_t ra, uintptr_t inner, int lenient) {
    if (!stallcap_plausible_return(m->map, ra)) return 0;
    uint64_t target = 0;
    int known = stallcap_call_target(ra, &target);
    return known == 1 ? stallcap_target_reaches(target, inner) : lenient && known == 0;
}

// How far the frame pointer lies above the stack pointer in the body of the function at `start`, decoded from
// its prologue: `[endbr64] push %rbp; mov %rsp,%rbp`, then pushes, `sub $n,%rsp` and register moves. -1 when the
// function does not start so.
static int64_t prologue_fp_offset(uintptr_t start, uintptr_t pc) {
    uint8_t code[64];
    size_t n = pc - start < sizeof code ? (size_t)(pc - start) : sizeof code, i = 0;
    if (pc <= start || n < 4 || stallcap_read_memory(start, code, n) != 0) return -1;
    if (code[0] == 0xF3 && code[1] == 0x0F && code[2] == 0x1E && code[3] == 0xFA) i = 4;  // endbr64
    if (i + 4 > n || code[i] != 0x55 || code[i + 1] != 0x48) return -1;                   // push %rbp
    if (!(code[i + 2] == 0x89 && code[i + 3] == 0xE5) && !(code[i + 2] == 0x8B && code[i + 3] == 0xEC)) return -1;
    int64_t offset = 0;
    for (i += 4; i < n;) {
        uint8_t b = code[i], next = i + 1 < n ? code[i + 1] : 0;
        if (b >= 0x50 && b <= 0x57) offset += 8, i += 1;                                   // push reg
        else if (b == 0x41 && next >= 0x50 && next <= 0x57) offset += 8, i += 2;           // push r8-r15
        else if (b == 0x48 && next == 0x83 && i + 3 < n && code[i + 2] == 0xEC) {          // sub $imm8,%rsp
            if ((int8_t)code[i + 3] < 0) return -1;
            offset += code[i + 3], i += 4;
        } else if (b == 0x48 && next == 0x81 && i + 6 < n && code[i + 2] == 0xEC) {       // sub $imm32,%rsp
            int32_t imm;
            memcpy(&imm, code + i + 3, 4);
            if (imm < 0) return -1;
            offset += imm, i += 7;
        } else if ((b & 0xF8) == 0x48 && (next == 0x89 || next == 0x8B) && i + 2 < n && code[i + 2] >= 0xC0 &&
                   (code[i + 2] & 7) != 4 && ((code[i + 2] >> 3) & 7) != 4)  // mov reg,reg (not rsp)
            i += 3;
        else break;
    }
    return offset;
}

// A frame whose rules put the CFA on rbp before any deeper frame saved rbp: finds rbp. The prologue's offset is
// taken when the return-address slot it gives holds a return from a call into the function (or an indirect
// call); else the first slot above the stack pointer that holds a return from a known call into it (marked
// scanned). 1 when found (and set), 0 when not.
static int recover_fp(memwalk *m, const eh_row *row, uintptr_t lookup) {
    const eh_rule *ra = &row->rules[EH_RA];
    if (ra->kind != EH_RULE_OFFSET) return 0;
    uintptr_t sp = m->w.regs[EH_SP], slot = (uintptr_t)(row->cfa_offset + ra->offset), value;
    int64_t offset = prologue_fp_offset(row->start, lookup + 1);
    uintptr_t found = 0;
    if (offset >= 0 && stack_word(m, sp + (uintptr_t)offset + slot, &value) == 0 && calls_into(m, value, lookup, 1))
        found = sp + (uintptr_t)offset;
    for (uintptr_t fp = sp; found == 0 && fp - sp < m->search_bytes; fp += sizeof(uintptr_t)) {
        if (stack_word(m, fp + slot, &value) != 0) return 0;
        if (calls_into(m, value, lookup, 0)) {
            found = fp;
            m->flags |= STALLCAP_MEMSTACK_SCANNED;
        }
    }
    if (found == 0) return 0;
    m->w.regs[EH_FP] = found;
    m->w.valid |= 1ull << EH_FP;
    return 1;
}

// Leaves a function that has no unwind information: its return address is the first word above the stack pointer
// that returns from a known call leading into it (through jump thunks). The caller's rbp is known when this frame's
// was: saved just below the return address (a frame record) or, pointing above it, left alone. 1 when moved, -1 not.
static int step_without_info(memwalk *m, uintptr_t lookup) {
    uintptr_t sp = m->w.regs[EH_SP], ra, fp = m->w.regs[EH_FP];
    int had_fp = (m->w.valid >> EH_FP) & 1;
    for (uintptr_t at = sp; at - sp < m->search_bytes; at += sizeof(uintptr_t)) {
        if (stack_word(m, at, &ra) != 0) return -1;
        if (!calls_into(m, ra, lookup, 0)) continue;
        int have_fp = had_fp && fp > at;
        if (had_fp && fp == at - sizeof(uintptr_t)) have_fp = stack_word(m, fp, &fp) == 0;
        m->w.regs[EH_SP] = at + sizeof(uintptr_t);
        m->w.regs[EH_FP] = fp;
        m->w.valid = (1ull << EH_SP) | (have_fp ? 1ull << EH_FP : 0);
        m->w.lo = m->w.regs[EH_SP] - BELOW_SP;
        m->w.pc = ra;
        m->w.exact = 0;
        m->flags |= STALLCAP_MEMSTACK_SCANNED;
        return 1;
    }
    return -1;
}

// True when `ra`, a caller's pc the rules gave, is one: it follows a call, or it is where a signal handler returns
// to (the caller's rules are a signal frame's).
static int is_return(const memwalk *m, uintptr_t ra) {
    eh_row row;
    eh_image image;
    return stallcap_plausible_return(m->map, ra) ||
           (ra > 0 && eh_find_row(ra - 1, &row, &image) == EH_FOUND && row.signal_frame);
}

// Moves the walk one frame up. 1: moved; 0: the outermost frame; else the STALLCAP_MEMSTACK_STOP_* reason.
static uint32_t step(memwalk *m) {
    uintptr_t lookup = m->w.exact ? m->w.pc : m->w.pc - 1;
    m->w.regs[EH_RA] = m->w.pc;  // DW_OP_breg16 (rip) in PLT entries' CFA
    m->w.valid |= 1ull << EH_RA;
    eh_row row;
    eh_image image;
    int found = eh_find_row(lookup, &row, &image);
    if (found == EH_NO_INFO) return step_without_info(m, lookup) > 0 ? 1 : STALLCAP_MEMSTACK_STOP_NO_INFO;
    if (found != EH_FOUND) return STALLCAP_MEMSTACK_STOP_BAD;
    if (!row.cfa_is_expr && row.cfa_reg == EH_FP && !(m->w.valid & (1ull << EH_FP)) && !recover_fp(m, &row, lookup))
        return STALLCAP_MEMSTACK_STOP_FRAME_POINTER;
    eh_step rules;
    eh_step_of_row(&row, &rules);
    walk before = m->w;
    int moved = stallcap_unwind_apply(&m->w, &rules);
    if (moved > 0 && !is_return(m, m->w.pc)) moved = -1;
    if (moved < 0) m->w = before;
    return moved >= 0 ? (uint32_t)moved : STALLCAP_MEMSTACK_STOP_BAD;
}

// The walk from (pc, sp): frames into `frames`, leaf first. Where it stops before the outermost frame, `*stop`
// gets the reason and the walk's state is the last frame's.
static uint32_t unwind_from(memwalk *m, uintptr_t *frames, uint32_t max_frames, uint32_t *stop) {
    uint32_t n = 0;
    *stop = 0;
    for (;;) {
        if (n == max_frames) {
            m->flags |= STALLCAP_MEMSTACK_TRUNCATED;
            return n;
        }
        frames[n++] = m->w.pc;
        uint32_t moved = step(m);
        if (moved == 0) return n;
        if (moved != 1) {
            *stop = moved;
            return n;
        }
    }
}
#endif

uint32_t stallcap_stack_from_memory(uint64_t pc, uint64_t sp, uint64_t stack_end, uint32_t max_scan_bytes,
                                    uintptr_t *frames, uint32_t max_frames, uint32_t *flags) {
    stallcap_code_map map;
    *flags = 0;
    if (max_frames == 0) return 0;
    uint64_t mapping_end = stallcap_read_maps(&map, sp);
    if (stack_end == 0) stack_end = mapping_end;
    if (max_scan_bytes > STALLCAP_MAX_SCAN_BYTES) max_scan_bytes = STALLCAP_MAX_SCAN_BYTES;
    uint32_t stop = 0, n = 0;
#if defined(__x86_64__)
    memwalk m;
    if (sp % 8 == 0 && sp > BELOW_SP && stack_end > sp) {
        memset(&m.w, 0, sizeof m.w);
        m.w.regs[EH_SP] = m.w.sp0 = (uintptr_t)sp;
        m.w.valid = 1ull << EH_SP;
        m.w.pc = (uintptr_t)pc;
        m.w.exact = 1;  // the instruction after `syscall`, about to run
        m.w.lo = (uintptr_t)sp - BELOW_SP;
        m.w.hi = (uintptr_t)stack_end;
        m.w.bounded = 1;
        m.w.memory = &m.window;
        m.window.base = 0;
        m.map = &map;
        m.search_bytes = max_scan_bytes;
        m.flags = 0;
        n = unwind_from(&m, frames, max_frames, &stop);
        *flags = m.flags | stop | (n > 1 ? STALLCAP_MEMSTACK_UNWOUND : 0);
        if (stop == 0) return n;
        pc = m.w.pc;
        sp = m.w.regs[EH_SP];
    }
#endif
    // The scan, from the frame the unwind information could not leave (or from the leaf).
    uint32_t scanned = 0, start = n > 0 ? n - 1 : 0;
    uint32_t count = stallcap_scan_stack(&map, pc, start > 0, sp, stack_end, max_scan_bytes, frames + start,
                                         max_frames - start, &scanned);
    *flags |= scanned;
    return start + count;
}
