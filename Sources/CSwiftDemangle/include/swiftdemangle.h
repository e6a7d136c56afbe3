// CSwiftDemangle: the Swift runtime's demangler, reached by a link-time reference, not by dlsym: a stallprof linked
// with --static-swift-stdlib carries the runtime inside its executable, where dlsym does not find it (before this
// shim such a build printed every Swift name mangled). No capture code here.
#ifndef SWIFTDEMANGLE_H
#define SWIFTDEMANGLE_H

#include <stddef.h>
#include <stdint.h>

/// `swift_demangle` of the Swift runtime (libswiftCore, shared or static): the demangled form of `mangled`
/// (`length` bytes) in a malloc'd NUL-terminated string the caller frees, or NULL when it is not a Swift symbol.
/// With `output` NULL and `flags` 0, as this project calls it.
char *stallprof_swift_demangle(const char *mangled, size_t length, char *output, size_t *output_length, uint32_t flags);

#endif
