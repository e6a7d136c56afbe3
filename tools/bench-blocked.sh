#!/usr/bin/env bash
# Cost of one blocked-on probe ("who holds the lock") on the watchdog thread, per step (median and p99,
# microseconds), for a waiter on a mutex whose owner sleeps (its stack read from memory). Prints; asserts nothing.
#   tools/bench-blocked.sh [PROBES]
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product stallprof-bench-blocked >/dev/null
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
exec .build/release/stallprof-bench-blocked "${1:-500}"
