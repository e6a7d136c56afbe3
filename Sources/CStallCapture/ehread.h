// ehread.h: internal to CStallCapture. Bounds-checked readers of DWARF data (unwind tables, CFA programs,
// expressions) for ehframe.c and ehexpr.c: each fails (-1) instead of reading past the end it was given.
#ifndef STALLCAPTURE_EHREAD_H
#define STALLCAPTURE_EHREAD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    const uint8_t *p, *end;
} cursor;

static inline int u8(cursor *c, uint8_t *v) {
    if (c->p >= c->end) return -1;
    *v = *c->p++;
    return 0;
}

static inline int fixed(cursor *c, void *out, size_t n) {
    if ((size_t)(c->end - c->p) < n) return -1;
    memcpy(out, c->p, n);
    c->p += n;
    return 0;
}

/// A LEB128 number's bits, and how many it spans (7 per byte).
static inline int leb(cursor *c, uint64_t *v, unsigned *bits) {
    uint64_t result = 0;
    unsigned shift = 0;
    uint8_t byte;
    do {
        if (u8(c, &byte) != 0) return -1;
        if (shift < 64) result |= (uint64_t)(byte & 0x7f) << shift;
        shift += 7;
    } while (byte & 0x80);
    *v = result;
    *bits = shift;
    return 0;
}

static inline int uleb(cursor *c, uint64_t *v) {
    unsigned bits;
    return leb(c, v, &bits);
}

static inline int sleb(cursor *c, int64_t *v) {
    uint64_t result;
    unsigned bits;
    if (leb(c, &result, &bits) != 0) return -1;
    if (bits < 64 && (result >> (bits - 1)) & 1) result |= ~0ull << bits;  // the last byte's sign bit
    *v = (int64_t)result;
    return 0;
}

/// Reads a pointer in DW_EH_PE encoding `enc`: pc-relative to the field's own address, data-relative to `data`
/// (the .eh_frame_hdr's start). Indirect, text- and function-relative encodings do not occur in the fields read here.
static inline int encoded(cursor *c, uint8_t enc, uintptr_t data, uintptr_t *out) {
    uintptr_t field = (uintptr_t)c->p;
    uint64_t value;
    switch (enc & 0x0f) {
    case 0x00: case 0x04: if (fixed(c, &value, 8) != 0) return -1; break;  // absptr (64-bit), udata8
    case 0x01: if (uleb(c, &value) != 0) return -1; break;
    case 0x02: { uint16_t v; if (fixed(c, &v, 2) != 0) return -1; value = v; break; }
    case 0x03: { uint32_t v; if (fixed(c, &v, 4) != 0) return -1; value = v; break; }
    case 0x09: { int64_t v; if (sleb(c, &v) != 0) return -1; value = (uint64_t)v; break; }
    case 0x0a: { int16_t v; if (fixed(c, &v, 2) != 0) return -1; value = (uint64_t)(int64_t)v; break; }
    case 0x0b: { int32_t v; if (fixed(c, &v, 4) != 0) return -1; value = (uint64_t)(int64_t)v; break; }
    case 0x0c: if (fixed(c, &value, 8) != 0) return -1; break;
    default: return -1;
    }
    switch (enc & 0xf0) {
    case 0x00: break;
    case 0x10: value += field; break;
    case 0x30: value += data; break;
    default: return -1;
    }
    *out = (uintptr_t)value;
    return 0;
}

#endif
