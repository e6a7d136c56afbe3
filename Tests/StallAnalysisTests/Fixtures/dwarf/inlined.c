// Source-line fixture (SourceLinesTests): compiled at test time with optimization, so that `scale` is inlined
// into `mix`, and `mix` into `entry`; the test compares stallprof's frames at every address of `entry` with
// llvm-symbolizer's.
static inline __attribute__((always_inline)) unsigned scale(unsigned value) {
    unsigned result = value * 2654435761u;
    return result ^ (result >> 13);
}

static inline __attribute__((always_inline)) unsigned mix(unsigned value, unsigned rounds) {
    for (unsigned i = 0; i < rounds; i++) {
        value = scale(value + i);
    }
    return value;
}

unsigned entry(unsigned value, unsigned rounds) {
    unsigned first = mix(value, rounds);
    return mix(first ^ 0x5bd1e995u, rounds + 1);
}
