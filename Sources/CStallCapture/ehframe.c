// Finds the unwind rules of one pc in its object's .eh_frame: `_dl_find_object` (glibc 2.35; lock-free and
// async-signal-safe by its manual) gives the object's mapping and its PT_GNU_EH_FRAME segment, whose sorted table
// gives the FDE; the CIE's and FDE's CFA programs run up to the pc. Every byte read lies inside that object's
// mapping; nothing allocates, locks or makes a system call.
#include "ehframe.h"
#include "ehread.h"

#include <dlfcn.h>
#include <string.h>

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#define HAVE_DL_FIND_OBJECT 1
#endif

/// Remembered states (DW_CFA_remember_state) kept at once; compilers nest one or two.
#define STATE_DEPTH 4

/// One CIE or FDE: its body (after the length) and where its successor starts.
static int entry(const uint8_t *at, const uint8_t *lo, const uint8_t *hi, cursor *body) {
    if (at < lo || at >= hi) return -1;
    cursor c = {at, hi};
    uint32_t length32;
    if (fixed(&c, &length32, 4) != 0 || length32 == 0) return -1;
    uint64_t length = length32;
    if (length32 == 0xffffffffu && fixed(&c, &length, 8) != 0) return -1;
    if (length > (uint64_t)(hi - c.p)) return -1;
    body->p = c.p;
    body->end = c.p + length;
    return 0;
}

typedef struct {
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_enc, has_z, signal_frame;
    cursor program;  // the initial instructions
} cie_info;

static int parse_cie(const uint8_t *at, const uint8_t *lo, const uint8_t *hi, cie_info *cie) {
    cursor c;
    if (entry(at, lo, hi, &c) != 0) return -1;
    uint32_t id;
    uint8_t version;
    if (fixed(&c, &id, 4) != 0 || id != 0 || u8(&c, &version) != 0) return -1;
    if (version != 1 && version != 3 && version != 4) return -1;
    const char *augmentation = (const char *)c.p;
    size_t length = strnlen(augmentation, (size_t)(c.end - c.p));
    if (length == (size_t)(c.end - c.p)) return -1;
    c.p += length + 1;
    if (version == 4) {
        uint8_t address_size, segment_size;
        if (u8(&c, &address_size) != 0 || u8(&c, &segment_size) != 0 || segment_size != 0) return -1;
    }
    memset(cie, 0, sizeof *cie);
    cie->fde_enc = 0;  // absptr
    if (uleb(&c, &cie->code_align) != 0 || sleb(&c, &cie->data_align) != 0) return -1;
    if (version == 1) {
        uint8_t ra;
        if (u8(&c, &ra) != 0) return -1;
        cie->ra_reg = ra;
    } else if (uleb(&c, &cie->ra_reg) != 0) return -1;
    if (cie->ra_reg != EH_RA) return -1;
    const uint8_t *after_augmentation = NULL;
    for (const char *a = augmentation; *a; a++) {
        switch (*a) {
        case 'z': {
            uint64_t data_length;
            if (a != augmentation || uleb(&c, &data_length) != 0 || data_length > (uint64_t)(c.end - c.p)) return -1;
            cie->has_z = 1;
            after_augmentation = c.p + data_length;
            break;
        }
        case 'R': if (u8(&c, &cie->fde_enc) != 0) return -1; break;
        case 'S': cie->signal_frame = 1; break;
        case 'L': { uint8_t enc; if (u8(&c, &enc) != 0) return -1; break; }  // the LSDA's encoding
        case 'P': {  // the personality routine (exception handling): its encoding and pointer, skipped
            uint8_t enc;
            uintptr_t ignored;
            if (u8(&c, &enc) != 0 || encoded(&c, enc & 0x0f, 0, &ignored) != 0) return -1;
            break;
        }
        case 'B': case 'G': break;  // aarch64: return address signed with the B key; MTE-tagged stack frames
        default: return -1;
        }
    }
    if (after_augmentation != NULL) c.p = after_augmentation;
    cie->program = c;
    return 0;
}

static void set_rule(eh_row *row, uint64_t reg, uint8_t kind, int64_t offset) {
    if (reg >= EH_NREGS) return;  // vector and other registers: not needed to find the callers
    row->rules[reg].kind = kind;
    row->rules[reg].offset = offset;
}

static int block(cursor *c, const uint8_t **start, uint32_t *length) {
    uint64_t n;
    if (uleb(c, &n) != 0 || n > (uint64_t)(c->end - c->p)) return -1;
    *start = c->p;
    *length = (uint32_t)n;
    c->p += n;
    return 0;
}

/// Runs a CFA program from `loc` until the row for `target` is complete (an advance past it ends the run).
static int run(cursor c, const cie_info *cie, uintptr_t loc, uintptr_t target, eh_row *row, const eh_row *initial,
               eh_row *saved, int *depth) {
    while (c.p < c.end) {
        uint8_t op;
        uint64_t reg = 0, u = 0;
        int64_t s = 0;
        u8(&c, &op);
        uint64_t delta = 0;
        int advance = 0;
        switch (op & 0xc0) {
        case 0x40: delta = op & 0x3f; advance = 1; break;
        case 0x80:
            if (uleb(&c, &u) != 0) return -1;
            set_rule(row, op & 0x3f, EH_RULE_OFFSET, (int64_t)u * cie->data_align);
            continue;
        case 0xc0: if ((op & 0x3f) < EH_NREGS) row->rules[op & 0x3f] = initial->rules[op & 0x3f]; continue;
        }
        if (!advance) switch (op) {
        case 0x00: break;  // nop
        case 0x01: {       // set_loc
            uintptr_t to;
            if (encoded(&c, cie->fde_enc, 0, &to) != 0) return -1;
            if (to > target) return 0;
            loc = to;
            break;
        }
        case 0x02: { uint8_t d; if (u8(&c, &d) != 0) return -1; delta = d; advance = 1; break; }
        case 0x03: { uint16_t d; if (fixed(&c, &d, 2) != 0) return -1; delta = d; advance = 1; break; }
        case 0x04: { uint32_t d; if (fixed(&c, &d, 4) != 0) return -1; delta = d; advance = 1; break; }
        case 0x05:  // offset_extended
            if (uleb(&c, &reg) != 0 || uleb(&c, &u) != 0) return -1;
            set_rule(row, reg, EH_RULE_OFFSET, (int64_t)u * cie->data_align);
            break;
        case 0x06:  // restore_extended
            if (uleb(&c, &reg) != 0) return -1;
            if (reg < EH_NREGS) row->rules[reg] = initial->rules[reg];
            break;
        case 0x07: if (uleb(&c, &reg) != 0) return -1; set_rule(row, reg, EH_RULE_UNDEF, 0); break;
        case 0x08: if (uleb(&c, &reg) != 0) return -1; set_rule(row, reg, EH_RULE_SAME, 0); break;
        case 0x09:  // register
            if (uleb(&c, &reg) != 0 || uleb(&c, &u) != 0 || u >= EH_NREGS) return -1;
            set_rule(row, reg, EH_RULE_REGISTER, (int64_t)u);
            break;
        case 0x0a:  // remember_state
            if (*depth == STATE_DEPTH) return -1;
            saved[(*depth)++] = *row;
            break;
        case 0x0b:  // restore_state: the whole row, CFA included (GCC's epilogues rely on that, as libgcc does)
            if (*depth == 0) return -1;
            *row = saved[--(*depth)];
            break;
        case 0x0c: case 0x12:  // def_cfa, def_cfa_sf
            if (uleb(&c, &reg) != 0) return -1;
            if (op == 0x0c) { if (uleb(&c, &u) != 0) return -1; s = (int64_t)u; }
            else { if (sleb(&c, &s) != 0) return -1; s *= cie->data_align; }
            row->cfa_is_expr = 0;
            row->cfa_reg = (uint16_t)(reg < 0xffff ? reg : 0xffff);
            row->cfa_offset = s;
            break;
        case 0x0d: if (uleb(&c, &reg) != 0) return -1; row->cfa_is_expr = 0; row->cfa_reg = (uint16_t)(reg < 0xffff ? reg : 0xffff); break;
        case 0x0e: if (uleb(&c, &u) != 0) return -1; row->cfa_offset = (int64_t)u; break;
        case 0x13: if (sleb(&c, &s) != 0) return -1; row->cfa_offset = s * cie->data_align; break;
        case 0x0f:  // def_cfa_expression
            if (block(&c, &row->cfa_expr, &row->cfa_expr_length) != 0) return -1;
            row->cfa_is_expr = 1;
            break;
        case 0x10: case 0x16: {  // expression, val_expression
            const uint8_t *expr;
            uint32_t length;
            if (uleb(&c, &reg) != 0 || block(&c, &expr, &length) != 0) return -1;
            if (reg < EH_NREGS) {
                row->rules[reg].kind = op == 0x10 ? EH_RULE_EXPR : EH_RULE_VAL_EXPR;
                row->rules[reg].expr = expr;
                row->rules[reg].expr_length = length;
            }
            break;
        }
        case 0x11: case 0x15:  // offset_extended_sf, val_offset_sf
            if (uleb(&c, &reg) != 0 || sleb(&c, &s) != 0) return -1;
            set_rule(row, reg, op == 0x11 ? EH_RULE_OFFSET : EH_RULE_VAL_OFFSET, s * cie->data_align);
            break;
        case 0x14:  // val_offset
            if (uleb(&c, &reg) != 0 || uleb(&c, &u) != 0) return -1;
            set_rule(row, reg, EH_RULE_VAL_OFFSET, (int64_t)u * cie->data_align);
            break;
        case 0x2e: if (uleb(&c, &u) != 0) return -1; break;  // GNU_args_size
        case 0x2f:                                           // GNU_negative_offset_extended
            if (uleb(&c, &reg) != 0 || uleb(&c, &u) != 0) return -1;
            set_rule(row, reg, EH_RULE_OFFSET, -(int64_t)u * cie->data_align);
            break;
#if defined(__aarch64__)
        case 0x2d: row->ra_signed ^= 1; break;  // AARCH64_negate_ra_state
#endif
        default: return -1;
        }
        if (advance) {
            uint64_t step = delta * cie->code_align;
            if (step > target - loc) return 0;  // the next row starts after target
            loc += step;
        }
    }
    return 0;
}

/// The FDE covering `pc`, by binary search in the .eh_frame_hdr table (datarel sdata4 pairs, as GNU ld, gold
/// and lld write it).
static const uint8_t *find_fde(uintptr_t pc, const uint8_t *hdr, const uint8_t *hi) {
    cursor c = {hdr, hi};
    uint8_t version, frame_enc, count_enc, table_enc;
    if (u8(&c, &version) != 0 || version != 1 || u8(&c, &frame_enc) != 0 || u8(&c, &count_enc) != 0 ||
        u8(&c, &table_enc) != 0 || table_enc != 0x3b)
        return NULL;
    uintptr_t frame, count;
    if (encoded(&c, frame_enc, (uintptr_t)hdr, &frame) != 0 || encoded(&c, count_enc, (uintptr_t)hdr, &count) != 0)
        return NULL;
    const int32_t *table = (const int32_t *)(const void *)c.p;
    if (count == 0 || count > (uintptr_t)(hi - c.p) / 8) return NULL;
    size_t low = 0, high = count;  // the answer is the last entry whose start is <= pc
    while (high - low > 1) {
        size_t mid = low + (high - low) / 2;
        if ((uintptr_t)hdr + (intptr_t)table[2 * mid] <= pc) low = mid;
        else high = mid;
    }
    if ((uintptr_t)hdr + (intptr_t)table[2 * low] > pc) return NULL;
    return hdr + table[2 * low + 1];
}

static const eh_image no_image = {EH_NO_IMAGE, 0, 0};

#if HAVE_DL_FIND_OBJECT
static void describe(const struct dl_find_object *object, eh_image *image) {
    const uint64_t k = 0x9e3779b97f4a7c15ull;
    uint64_t h = (uint64_t)(uintptr_t)object->dlfo_map_start * k;
    h = (h ^ (uint64_t)(uintptr_t)object->dlfo_map_end) * k;
    h = (h ^ (uint64_t)(uintptr_t)object->dlfo_eh_frame) * k;
    h = (h ^ (uint64_t)(uintptr_t)object->dlfo_link_map) * k;
    image->tag = h == 0 || h == EH_NO_IMAGE ? 2 : (uintptr_t)h;
    image->lo = (uintptr_t)object->dlfo_map_start;
    image->hi = (uintptr_t)object->dlfo_map_end;
}
#endif

void eh_image_of(uintptr_t pc, eh_image *image) {
    *image = no_image;
#if HAVE_DL_FIND_OBJECT
    struct dl_find_object object;
    if (_dl_find_object((void *)pc, &object) == 0) describe(&object, image);
#else
    (void)pc;
#endif
}

int eh_find_row(uintptr_t pc, eh_row *row, eh_image *image) {
    *image = no_image;
#if HAVE_DL_FIND_OBJECT
    struct dl_find_object object;
    if (_dl_find_object((void *)pc, &object) != 0) return EH_NO_INFO;
    describe(&object, image);
    if (object.dlfo_eh_frame == NULL) return EH_NO_INFO;
    const uint8_t *lo = object.dlfo_map_start, *hi = object.dlfo_map_end;
    const uint8_t *hdr = object.dlfo_eh_frame;
    if (hdr < lo || hdr >= hi) return EH_BAD;
    const uint8_t *fde = find_fde(pc, hdr, hi);
    if (fde == NULL) return EH_NO_INFO;
    cursor c;
    uint32_t cie_offset;
    if (entry(fde, lo, hi, &c) != 0 || fixed(&c, &cie_offset, 4) != 0 || cie_offset == 0) return EH_BAD;
    cie_info cie;
    if (parse_cie(c.p - 4 - cie_offset, lo, hi, &cie) != 0) return EH_BAD;
    uintptr_t start, range;
    if (encoded(&c, cie.fde_enc, (uintptr_t)hdr, &start) != 0 || encoded(&c, cie.fde_enc & 0x0f, 0, &range) != 0)
        return EH_BAD;
    if (pc < start || pc - start >= range) return EH_NO_INFO;
    uint64_t skip = 0;
    if (cie.has_z && (uleb(&c, &skip) != 0 || skip > (uint64_t)(c.end - c.p))) return EH_BAD;
    c.p += skip;
    memset(row, 0, sizeof *row);
    row->signal_frame = cie.signal_frame;
    row->start = start;
    eh_row initial, saved[STATE_DEPTH];
    int depth = 0;
    if (run(cie.program, &cie, start, pc, row, row, saved, &depth) != 0) return EH_BAD;
    initial = *row;
    depth = 0;
    if (run(c, &cie, start, pc, row, &initial, saved, &depth) != 0) return EH_BAD;
    return EH_FOUND;
#else
    (void)pc;
    (void)row;
    return EH_NO_INFO;  // glibc before 2.35: no async-signal-safe way to find an object; frame pointers only
#endif
}
