// The executable mappings of this process, read from /proc/self/maps once per stack walk, and the test a word of a
// sleeping thread's stack must pass to be taken for a return address: it points into executable code just after a
// call instruction. Code is read with process_vm_readv only (a mapping gone since costs a failed read, never a
// fault). Also the lines that name files, for the images the watchdog finds without the loader's lock
// (stallcap_file_mappings). Watchdog thread only; never signal context.
#include "codemap.h"
#include "stallcapture_probe.h"
#include "stallcapture_watchdog.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

// The value of a lowercase hexadecimal digit, or -1.
static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

// Parses "start-end perms ..." of one maps line of `length` bytes. Returns its four permission letters ("r-xp"),
// or NULL when the line has not that form.
static const char *parse_maps_line(const char *line, size_t length, uint64_t *start, uint64_t *end) {
    uint64_t v[2] = {0, 0};
    const char *p = line, *limit = line + length;
    for (int i = 0; i < 2; i++) {
        int digits = 0;
        for (int d; p < limit && (d = hex_value(*p)) >= 0 && digits < 17; p++, digits++) v[i] = v[i] * 16 + (uint64_t)d;
        if (digits == 0 || p >= limit || *p != (i == 0 ? '-' : ' ')) return NULL;
        p++;
    }
    if (limit - p < 4) return NULL;
    *start = v[0];
    *end = v[1];
    return p;
}

// Calls `visit` with each whole line of /proc/self/maps (its newline included, `length` counting it), reading it
// a buffer at a time; a line longer than the buffer is dropped. Returns -1 when the file cannot be opened.
static int for_each_maps_line(void (*visit)(const char *line, size_t length, void *context), void *context) {
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buffer[8192];
    size_t used = 0;
    for (;;) {
        ssize_t n = read(fd, buffer + used, sizeof buffer - used);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        used += (size_t)n;
        char *line = buffer, *end = buffer + used, *newline;
        while ((newline = memchr(line, '\n', (size_t)(end - line))) != NULL) {
            visit(line, (size_t)(newline - line) + 1, context);
            line = newline + 1;
        }
        used = (size_t)(end - line);
        memmove(buffer, line, used);
        if (used == sizeof buffer) used = 0;  // a line longer than the buffer: drop it
    }
    close(fd);
    return 0;
}

// One held reading of every mapping (stallcap_maps_hold), for the walks of a snapshot of many threads: each walk
// would otherwise read the whole file again, which grows with the thread count (two mappings per thread stack).
enum { MAX_HELD_RANGES = 4096 };
static struct {
    int held, valid;
    uint32_t count;
    uint64_t start[MAX_HELD_RANGES], end[MAX_HELD_RANGES];
    uint8_t executable[MAX_HELD_RANGES];
} g_held;

// What read_file fills as it visits the lines.
struct read_state {
    stallcap_code_map *map;
    uint64_t address, found;
    int keep;
};

static void read_line(const char *line, size_t length, void *context) {
    struct read_state *state = context;
    uint64_t start, end;
    const char *perms = parse_maps_line(line, length, &start, &end);
    if (perms == NULL) return;
    int executable = perms[0] == 'r' && perms[2] == 'x';
    if (state->address != 0 && state->address >= start && state->address < end) state->found = end;
    stallcap_code_map *map = state->map;
    if (map && executable && map->count < STALLCAP_MAX_CODE_RANGES) {
        map->start[map->count] = start;
        map->end[map->count] = end;
        map->count++;
    }
    if (state->keep && g_held.count < MAX_HELD_RANGES) {
        g_held.start[g_held.count] = start;
        g_held.end[g_held.count] = end;
        g_held.executable[g_held.count++] = (uint8_t)executable;
    } else if (state->keep) {
        g_held.valid = 0;  // too many to hold: every walk reads the file
    }
}

// Reads the file: fills `map` (when not NULL) and, when `keep`, g_held. Returns the end of the mapping holding
// `address`, or 0.
static uint64_t read_file(stallcap_code_map *map, uint64_t address, int keep) {
    if (map) map->count = 0;
    if (keep) g_held.count = 0, g_held.valid = 1;
    struct read_state state = {.map = map, .address = address, .found = 0, .keep = keep};
    if (for_each_maps_line(read_line, &state) != 0) return g_held.valid = 0, 0;
    return state.found;
}

void stallcap_maps_hold(void) {
    g_held.held = 1;
    read_file(NULL, 0, 1);
}

void stallcap_maps_release(void) { g_held.held = 0, g_held.valid = 0; }

uint64_t stallcap_read_maps(stallcap_code_map *map, uint64_t address) {
    if (!(g_held.held && g_held.valid)) return read_file(map, address, 0);
    if (map) map->count = 0;
    uint64_t found = 0;
    for (uint32_t i = 0; i < g_held.count; i++) {
        if (address != 0 && address >= g_held.start[i] && address < g_held.end[i]) found = g_held.end[i];
        if (map && g_held.executable[i] && map->count < STALLCAP_MAX_CODE_RANGES) {
            map->start[map->count] = g_held.start[i];
            map->end[map->count] = g_held.end[i];
            map->count++;
        }
    }
    return found;
}


// Index of the range holding `address` (the kernel lists mappings in address order), or -1.
static int code_range(const stallcap_code_map *map, uint64_t address) {
    int lo = 0, hi = (int)map->count - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (address < map->start[mid]) hi = mid - 1;
        else if (address >= map->end[mid]) lo = mid + 1;
        else return mid;
    }
    return -1;
}

#if defined(__x86_64__)
// Bytes taken by a ModR/M byte and what follows it (SIB, displacement), or -1 when `available` is too short.
static int modrm_length(const uint8_t *p, int available) {
    int mod = p[0] >> 6, rm = p[0] & 7, length = 1;
    if (mod == 3) return 1;
    if (rm == 4) {
        if (available < 2) return -1;
        length = 2;
        if (mod == 0 && (p[1] & 7) == 5) length += 4;
    } else if (mod == 0 && rm == 5) {
        length += 4;  // RIP-relative
    }
    if (mod == 1) length += 1;
    if (mod == 2) length += 4;
    return length;
}

// True when the 8 bytes before a return address end with a call: E8 rel32, or FF /2 (with REX or notrack).
static int ends_with_call(const uint8_t code[8], int available) {
    if (available >= 5 && code[3] == 0xE8) return 1;
    for (int start = 8 - available; start <= 6; start++) {
        int j = start;
        while (j < start + 2 && j < 7 && ((code[j] >= 0x40 && code[j] <= 0x4F) || code[j] == 0x3E)) j++;
        if (j > 6 || code[j] != 0xFF || ((code[j + 1] >> 3) & 7) != 2) continue;
        int length = modrm_length(&code[j + 1], 8 - (j + 1));
        if (length > 0 && j + 1 + length == 8) return 1;
    }
    return 0;
}
#elif defined(__aarch64__)
// True when the instruction before a return address is BL, BLR or one of the pointer-authenticating BLRA*.
static int ends_with_call(const uint8_t code[8], int available) {
    if (available < 4) return 0;
    uint32_t insn;
    memcpy(&insn, code + 4, 4);
    return (insn & 0xFC000000u) == 0x94000000u || (insn & 0xFFFFFC1Fu) == 0xD63F0000u ||
           (insn & 0xFEFFF800u) == 0xD63F0800u;
}
#else
#error "stallprof's capture supports x86_64 and aarch64 Linux"
#endif

// The call-instruction test of stallcap_plausible_return, reading the code before `address` from memory.
int stallcap_plausible_return(const stallcap_code_map *map, uint64_t address) {
    int index = code_range(map, address);
    if (index < 0) return 0;
    uint64_t from = address - 8 >= map->start[index] && address >= 8 ? address - 8 : map->start[index];
    int available = (int)(address - from);
    if (available < 2) return 0;
    uint8_t code[8] = {0};
    if (stallcap_read_memory(from, code + (8 - available), (size_t)available) != 0) return 0;
    return ends_with_call(code, available);
}

int stallcap_is_return_address(uint64_t address) {
    stallcap_code_map map;
    stallcap_read_maps(&map, 0);
    return stallcap_plausible_return(&map, address);
}

// The lines stallcap_file_mappings copies: a file's executable mappings (a loaded image's code; MappedImages needs
// only the first of each file, its range comes from the file's headers). A process may map thousands of files only
// to read them (the test process: ~1,900 read-only mappings of clang module caches' .pcm files): copied and parsed
// in Swift, at 2,061 lines, they cost the watchdog 50 ms of CPU at each stall's start, 400-550 ms of wall time at
// load 11, most of a stall unsampled.
struct code_lines {
    char *out;
    size_t capacity, total;
};

static void copy_code_line(const char *line, size_t length, void *context) {
    struct code_lines *lines = context;
    uint64_t start, end;
    const char *perms = parse_maps_line(line, length, &start, &end);
    if (perms == NULL || perms[2] != 'x' || memchr(line, '/', length) == NULL) return;  // only a file's path has '/'
    if (lines->total + length <= lines->capacity) memcpy(lines->out + lines->total, line, length);
    lines->total += length;
}

size_t stallcap_file_mappings(char *out, size_t capacity) {
    struct code_lines lines = {.out = out, .capacity = capacity, .total = 0};
    for_each_maps_line(copy_code_line, &lines);
    return lines.total;
}
