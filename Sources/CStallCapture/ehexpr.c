// A DWARF expression evaluator for the unwinder: the operations call frame information uses (PLT entries' CFA,
// the signal trampoline's saved registers, realigned stacks). Bounded stack, bounded steps, memory read only
// through the caller's bounds-checked `load`: async-signal-safe.
#include "ehframe.h"
#include "ehread.h"

#define STACK 16
#define MAX_STEPS 256  // branches can loop: an expression that runs longer is rejected

/// Reads an `n`-byte little-endian operand, sign-extended when `is_signed`.
static int operand(cursor *c, size_t n, int is_signed, uintptr_t *v) {
    uint64_t value = 0;
    if (fixed(c, &value, n) != 0) return -1;
    if (is_signed && n < 8 && (value >> (8 * n - 1)) & 1) value |= ~0ull << (8 * n);
    *v = (uintptr_t)value;
    return 0;
}

int eh_evaluate(const uint8_t *expr, uint32_t length, const uintptr_t *regs, uint64_t valid, int push_cfa,
                uintptr_t cfa, eh_load_fn load, const void *context, uintptr_t *result) {
    uintptr_t stack[STACK];
    int top = 0;  // number of entries
    if (push_cfa) stack[top++] = cfa;
    cursor c = {expr, expr + length};
    for (int steps = 0; c.p < c.end; steps++) {
        if (steps == MAX_STEPS) return -1;
        uint8_t op = *c.p++;
        uintptr_t a, b;
        uint64_t u;
        int64_t s;
#define NEED(n) \
    if (top < (n)) return -1
#define PUSH(v)                      \
    do {                             \
        uintptr_t pushed_ = (v);     \
        if (top == STACK) return -1; \
        stack[top++] = pushed_;      \
    } while (0)
        if (op >= 0x30 && op <= 0x4f) {  // lit0-31
            PUSH((uintptr_t)(op - 0x30));
            continue;
        }
        if ((op >= 0x70 && op <= 0x8f) || op == 0x92) {  // breg0-31, bregx
            u = op == 0x92 ? 0 : (uint64_t)(op - 0x70);
            if (op == 0x92 && uleb(&c, &u) != 0) return -1;
            if (sleb(&c, &s) != 0 || u >= EH_NREGS || !(valid & (1ull << u))) return -1;
            PUSH(regs[u] + (uintptr_t)s);
            continue;
        }
        switch (op) {
        case 0x03: if (operand(&c, 8, 0, &a) != 0) return -1; PUSH(a); break;  // addr
        case 0x06:                                                                  // deref
            NEED(1);
            if (load(context, stack[top - 1], &stack[top - 1]) != 0) return -1;
            break;
        case 0x08: case 0x09: case 0x0a: case 0x0b: case 0x0c: case 0x0d: case 0x0e: case 0x0f: {  // constNu/s
            size_t n = (size_t)1 << ((op - 0x08) / 2);
            if (operand(&c, n, (op - 0x08) & 1, &a) != 0) return -1;
            PUSH(a);
            break;
        }
        case 0x10: if (uleb(&c, &u) != 0) return -1; PUSH((uintptr_t)u); break;  // constu
        case 0x11: if (sleb(&c, &s) != 0) return -1; PUSH((uintptr_t)s); break;  // consts
        case 0x12: NEED(1); PUSH(stack[top - 1]); break;                                   // dup
        case 0x13: NEED(1); top--; break;                                                  // drop
        case 0x14: NEED(2); PUSH(stack[top - 2]); break;                                   // over
        case 0x15: {                                                                       // pick
            uint8_t index;
            if (u8(&c, &index) != 0) return -1;
            NEED(index + 1);
            PUSH(stack[top - 1 - index]);
            break;
        }
        case 0x16: NEED(2); a = stack[top - 1]; stack[top - 1] = stack[top - 2]; stack[top - 2] = a; break;  // swap
        case 0x17:                                                                                          // rot
            NEED(3);
            a = stack[top - 1];
            stack[top - 1] = stack[top - 2];
            stack[top - 2] = stack[top - 3];
            stack[top - 3] = a;
            break;
        case 0x19: NEED(1); if ((intptr_t)stack[top - 1] < 0) stack[top - 1] = -stack[top - 1]; break;  // abs
        case 0x1f: NEED(1); stack[top - 1] = -stack[top - 1]; break;                                     // neg
        case 0x20: NEED(1); stack[top - 1] = ~stack[top - 1]; break;                                     // not
        case 0x23: if (uleb(&c, &u) != 0) return -1; NEED(1); stack[top - 1] += (uintptr_t)u; break;
        case 0x1a: case 0x1b: case 0x1c: case 0x1d: case 0x1e: case 0x21: case 0x22: case 0x24: case 0x25:
        case 0x26: case 0x27: case 0x29: case 0x2a: case 0x2b: case 0x2c: case 0x2d: case 0x2e:
            NEED(2);
            b = stack[--top];  // the top entry is the second operand
            a = stack[top - 1];
            switch (op) {
            case 0x1a: a &= b; break;
            case 0x1b: if (b == 0) return -1; a = (uintptr_t)((intptr_t)a / (intptr_t)b); break;
            case 0x1c: a -= b; break;
            case 0x1d: if (b == 0) return -1; a %= b; break;
            case 0x1e: a *= b; break;
            case 0x21: a |= b; break;
            case 0x22: a += b; break;
            case 0x24: a = b >= 64 ? 0 : a << b; break;
            case 0x25: a = b >= 64 ? 0 : a >> b; break;
            case 0x26: a = (uintptr_t)((intptr_t)a >> (b >= 64 ? 63 : b)); break;
            case 0x27: a ^= b; break;
            case 0x29: a = a == b; break;
            case 0x2a: a = (intptr_t)a >= (intptr_t)b; break;
            case 0x2b: a = (intptr_t)a > (intptr_t)b; break;
            case 0x2c: a = (intptr_t)a <= (intptr_t)b; break;
            case 0x2d: a = (intptr_t)a < (intptr_t)b; break;
            case 0x2e: a = a != b; break;
            }
            stack[top - 1] = a;
            break;
        case 0x28: case 0x2f: {  // bra, skip
            if (operand(&c, 2, 1, &a) != 0) return -1;
            int take = 1;
            if (op == 0x28) {
                NEED(1);
                take = stack[--top] != 0;
            }
            intptr_t offset = (intptr_t)a;
            if (take) {
                if (offset < expr - c.p || offset > c.end - c.p) return -1;
                c.p += offset;
            }
            break;
        }
        case 0x96: break;  // nop
        default: return -1;
        }
#undef NEED
#undef PUSH
    }
    if (top == 0) return -1;
    *result = stack[top - 1];
    return 0;
}
