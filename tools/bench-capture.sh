#!/usr/bin/env bash
# Capture-path benchmark, one run (~50 s with the defaults). Prints figures; asserts nothing.
#  - main-thread stop per sample (median, p90) against the floor (tgkill + a handler storing one atomic), their
#    ratio, the watchdog's CPU per sample;
#  - slowdown of a busy main thread sampled at 100 Hz and 1 kHz (work per second, interleaved windows);
#  - idle cost of a RunLoop.main app with and without the watchdog (threshold 250 ms; child processes,
#    interleaved), and per-thread CPU over the measured window; then the same for a dispatchMain() app and an
#    async @main app (main actor), where the watchdog reads libdispatch's main queue instead of pinging it; each
#    beside its goal (0.3 ms/s for RunLoop.main, 0.5 for the others).
# As root it runs at nice -15 (BENCH_NICE=0 turns that off): on this shared 2-core machine, other builds otherwise
# preempt the measured threads mid-sample and the medians measure the scheduler, not the hand-off.
#   tools/bench-capture.sh [SAMPLES] [SLOWDOWN_ROUNDS] [IDLE_PAIRS] [IDLE_SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
swift build -c release --product stallprof-bench-capture >/dev/null
bin=.build/release/stallprof-bench-capture
nice=()
[ "$(id -u)" -eq 0 ] && [ "${BENCH_NICE:--15}" != 0 ] && nice=(nice -n "${BENCH_NICE:--15}")
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%Y-%m-%dT%H:%MZ); ${nice[*]:-not niced}"
"${nice[@]}" "$bin" stop "${1:-2000}" 50
"${nice[@]}" "$bin" slowdown "${2:-5}" 0.5
"${nice[@]}" "$bin" idle "${3:-3}" "${4:-4}" runloop
"${nice[@]}" "$bin" idle "${3:-3}" "${4:-4}" dispatch
"${nice[@]}" "$bin" idle "${3:-3}" "${4:-4}" async
