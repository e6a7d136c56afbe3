#include "swiftdemangle.h"

// Declared in the Swift runtime's public C interface (swift/Demangling/Demangle.h, extern "C").
extern char *swift_demangle(const char *mangled, size_t length, char *output, size_t *output_length, uint32_t flags);

char *stallprof_swift_demangle(const char *mangled, size_t length, char *output, size_t *output_length, uint32_t flags) {
    return swift_demangle(mangled, length, output, output_length, flags);
}
