// Local-only unwinding: maps unw_* onto the _ULx86_64_* symbols in libunwind.so.8.
#define UNW_LOCAL_ONLY
#include <libunwind.h>
