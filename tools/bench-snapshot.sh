#!/usr/bin/env bash
# Cost of one thread snapshot (every thread's name, state, wait and stack, as the watchdog takes it during a blocked
# episode) for processes of 10 and 200 threads: median and p90 in milliseconds. Beside it, the peer: gdb's
# `thread apply all bt` on the same 200-thread process (attach, unwind, detach), when gdb can attach. Prints;
# asserts nothing.
#   tools/bench-snapshot.sh [SNAPSHOTS]
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product stallprof-bench-snapshot >/dev/null
bench=.build/release/stallprof-bench-snapshot
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for threads in 10 200; do "$bench" "$threads" "${1:-50}"; done
if ! command -v gdb >/dev/null; then echo "gdb: not installed (apt install gdb), no peer figure"; exit 0; fi
"$bench" 200 1 --hold > /tmp/bench-snapshot.pid &
holder=$!
trap 'kill $holder 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -s /tmp/bench-snapshot.pid ] && break; sleep 0.1; done
pid=$(cat /tmp/bench-snapshot.pid)
times=()
for _ in 1 2 3; do
    start=$(date +%s%N)
    if ! gdb -batch -p "$pid" -ex "thread apply all bt" >/dev/null 2>&1; then echo "gdb could not attach"; exit 0; fi
    times+=($(( ($(date +%s%N) - start) / 1000000 )))
done
median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p)
echo "peer: gdb -batch 'thread apply all bt' on 200 threads: median ${median} ms of 3 runs (${times[*]} ms)"
ours=$("$bench" 200 "${1:-50}" | sed -E 's/.*median ([0-9.]+) ms.*/\1/')
awk -v g="$median" -v o="$ours" 'BEGIN { printf "ratio: gdb / stallprof snapshot = %.0fx\n", g / o }'
