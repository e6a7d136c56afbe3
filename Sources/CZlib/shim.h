// CZlib: the system's zlib (Debian's zlib1g-dev), for gzip input and pprof output. tools/setup.sh installs it.
#include <zlib.h>
