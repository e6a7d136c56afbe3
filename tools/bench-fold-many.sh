#!/usr/bin/env bash
# How `stallprof fold` and `report` scale over many inputs (a CI matrix's or a fleet's captures): it parses them in parallel
# and sums their counts. Prints, for N captures and for N perf script files, the wall time on one core
# (`taskset -c 0`) and on every core, best of 3 each, and the speed-up; the outputs must be identical.
# Inputs (under ${TMPDIR:-/tmp}, never committed): one busy capture of samples/stall-demo (release build,
# BENCH_STALL_MS long, default 3000) copied BENCH_FILES times (default 8), and the perf script of
# ../shared/conformance (or a synthetic one) cut into BENCH_FILES parts of ~5 MB each.
# Usage: tools/bench-fold-many.sh. Figures depend on the machine and its load; compare runs on one machine.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
files="${BENCH_FILES:-8}"
stall_ms="${BENCH_STALL_MS:-3000}"
work="${TMPDIR:-/tmp}/stallprof-bench-fold-many"
rm -rf "$work"
mkdir -p "$work/captures" "$work/perf"
command -v taskset >/dev/null || { echo "bench-fold-many: taskset (util-linux) is needed" >&2; exit 1; }
(cd "$repo" && swift build -c release --product stallprof >/dev/null && swift build -c release --product stall-demo >/dev/null)
bin="$(cd "$repo" && swift build -c release --show-bin-path)"

STALLPROF_OUTPUT="$work/one.stalls" "$bin/stall-demo" --stall busy --stall-ms "$stall_ms" >/dev/null
for i in $(seq "$files"); do cp "$work/one.stalls" "$work/captures/$i.stalls"; done
perf_one="$work/perf-one.txt"
conformance="$(dirname "$repo")/shared/conformance/brendangregg-FlameGraph/stackcollapse-perf/input"
if [ -d "$conformance" ]; then cat "$conformance"/*.txt >"$perf_one"; else
    awk 'BEGIN { for (e = 0; e < 20000; e++) { printf "app 1/1 [000] %d.0: 1 cpu-clock:\n", e
         for (d = 0; d < 20; d++) printf "\t    %x f%d+0x1 (/usr/lib/libapp.so)\n", 4096 * d + e % 97, (d + e) % 13; print "" } }' >"$perf_one"
fi
for i in $(seq "$files"); do
    : >"$work/perf/$i.txt"
    while [ "$(stat -c %s "$work/perf/$i.txt")" -lt 5000000 ]; do cat "$perf_one" >>"$work/perf/$i.txt"; done
done

best_of() {  # best_of N command...: the shortest wall time in seconds, output kept in $work/out
    local n="$1" best="" t
    shift
    for _ in $(seq "$n"); do
        /usr/bin/time -f "%e" -o "$work/time" "$@" >"$work/out" 2>/dev/null
        t="$(cat "$work/time")"
        if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then best="$t"; fi
    done
    echo "$best"
}
echo "stallprof over $files inputs, $(nproc) cores"
for job in "fold captures" "fold perf" "report captures"; do
    read -r command kind <<<"$job"
    inputs=("$work/$kind"/*)
    one="$(best_of 3 taskset -c 0 "$bin/stallprof" "$command" "${inputs[@]}")"
    cp "$work/out" "$work/one-core.txt"
    all="$(best_of 3 "$bin/stallprof" "$command" "${inputs[@]}")"
    cmp -s "$work/out" "$work/one-core.txt" || { echo "bench-fold-many: $job: outputs differ" >&2; exit 1; }
    printf "  %-16s one core %6.2f s   every core %6.2f s   speed-up %.2fx\n" "$job" "$one" "$all" \
        "$(awk -v a="$one" -v b="$all" 'BEGIN { print (b > 0 ? a / b : 0) }')"
done
