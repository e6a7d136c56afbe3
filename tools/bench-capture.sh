#!/usr/bin/env bash
# Capture-path benchmark: per-sample cost at stack depth ~50 (median and p99, microseconds) and the watchdog's
# CPU cost per second of an idle app. Prints figures; asserts nothing.
#   tools/bench-capture.sh [SAMPLES] [IDLE_SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
swift build -c release --product stallprof-bench-capture >/dev/null
bin=.build/release/stallprof-bench-capture
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" capture "${1:-2000}" 50
"$bin" idle "${2:-5}"
