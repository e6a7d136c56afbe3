#!/usr/bin/env bash
# Capture-path benchmark, one run (~3-5 min with the defaults, 1.5-3 of them the slowdown). Prints figures;
# asserts nothing.
#  - main-thread stop per sample (median, p90) against the floor (tgkill + a handler storing one atomic), their
#    ratio, the watchdog's CPU per sample (the CPU of its sample calls) against the floor's, both for a call that
#    waits for the answer (the watchdog's form above two ticks' rate) and pipelined (the form at 10 ms: the
#    request sent at one wake and collected at the next, 10 ms later), and the pipelined round trip from the
#    request to the handler (info.timestamp_ns + unwind_ns) against its bound, a tick (+100 us) while the thread
#    runs;
#  - slowdown of a busy main thread sampled at 100 Hz and 1 kHz (stallcap_sample, the watchdog's delivery): the
#    main thread's CPU time for a fixed amount of work, in SLOWDOWN_BLOCKS blocks per rate of four windows of
#    SLOWDOWN_WINDOW_MS of CPU each, off/on/on/off; each block's contrast is the work lost per CPU second. Printed:
#    the mean of the contrasts with its 95 % confidence interval (Student's t over 20 batch means: the cost drifts
#    for seconds at a time), the median beside it, and whether the interval settles the 0.1 % goal (its upper end
#    below 0.1 %: met; its lower end above: missed; else not resolved) and is narrower than ±0.1 %; then the same
#    for the blocks in which the sampler thread ran on another CPU (the cost on a machine with an idle core) and
#    for those in which it ran on the sampled thread's CPU (every core busy), 2-3 times as costly here. Blocks
#    with a window over 10 % slower than the block's fastest (the host, not sampling) are set aside and counted.
#    The 100 Hz rows are scaled to exactly 100 samples per CPU second (the on windows get some more or fewer);
#    the 1 kHz rows are at the rate the kernel gives (one sample per tick at most). The defaults (2400 blocks of
#    5 ms windows, about 1.7 min, longer under load) gave all-blocks intervals of ±0.025-0.08 % at load averages
#    1-5 on this 2-core machine (with 2000 blocks, once ±0.10 at 1 kHz, as the sampler's placement drifted).
#    `stallprof-bench-capture slowdown BLOCKS MS control` runs the same with a sampler that wakes but sends no
#    request (the design's own bias, and what the sampler thread's wake-ups cost);
#  - idle cost of a RunLoop.main app with and without the watchdog (threshold 250 ms; child processes,
#    interleaved), and per-thread CPU over the measured window; then the same for a dispatchMain() app and an
#    async @main app (main actor), where the watchdog reads libdispatch's main queue instead of pinging it; each
#    beside its goal (0.3 ms/s for RunLoop.main, 0.5 for the others);
#  - the cost of watched targets (StallTarget): a RunLoop.main app with 1, 8 and 64 idle event-loop threads, its
#    watchdog watching the main queue alone or every loop too (threshold 250 ms), interleaved; the difference over
#    the count is the cost per target, beside its goal (0.05 ms/s): loops in epoll_wait (SwiftNIO's shape, with the
#    idle cooperative pool after them), then loops on a condition variable, then serial queues. Windows of 10 s or
#    more include the real pings that verify the quiet checks (every 40).
# As root it runs at nice -15 (BENCH_NICE=0 turns that off): on this shared 2-core machine, other builds otherwise
# preempt the measured threads mid-sample and the medians measure the scheduler, not the hand-off.
#   tools/bench-capture.sh [SAMPLES] [SLOWDOWN_BLOCKS] [IDLE_PAIRS] [IDLE_SECONDS] [SLOWDOWN_WINDOW_MS]
#   (the targets' windows: TARGET_SECONDS, default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
swift build -c release --product stallprof-bench-capture >/dev/null
bin=.build/release/stallprof-bench-capture
nice=()
[ "$(id -u)" -eq 0 ] && [ "${BENCH_NICE:--15}" != 0 ] && nice=(nice -n "${BENCH_NICE:--15}")
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%Y-%m-%dT%H:%MZ); ${nice[*]:-not niced}"
"${nice[@]}" "$bin" stop "${1:-2000}" 50
"${nice[@]}" "$bin" slowdown "${2:-2400}" "${5:-5}"
"${nice[@]}" "$bin" idle "${3:-3}" "${4:-4}" runloop
"${nice[@]}" "$bin" idle "${3:-3}" "${4:-4}" dispatch
"${nice[@]}" "$bin" idle "${3:-3}" "${4:-4}" async
"${nice[@]}" "$bin" targets "${3:-3}" "${TARGET_SECONDS:-10}" epoll
"${nice[@]}" "$bin" targets "${3:-3}" "${TARGET_SECONDS:-10}" futex
"${nice[@]}" "$bin" targets "${3:-3}" "${TARGET_SECONDS:-10}" queue
