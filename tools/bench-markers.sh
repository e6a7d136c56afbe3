#!/usr/bin/env bash
# StallMarker cost: nanoseconds per call without and with a watchdog, and heap allocations on the calling thread
# (counted by a preloaded malloc wrapper, tools/bench-markers/count-allocations.c). Prints figures; asserts nothing.
#   tools/bench-markers.sh [CALLS]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
swift build -c release --product stallprof-bench-markers >/dev/null
mkdir -p .build/bench-markers
cc -shared -fPIC -O2 -o .build/bench-markers/count-allocations.so tools/bench-markers/count-allocations.c
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
LD_PRELOAD="$PWD/.build/bench-markers/count-allocations.so" .build/release/stallprof-bench-markers "${1:-200000}"
