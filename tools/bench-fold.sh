#!/usr/bin/env bash
# Benchmark of `stallprof fold --format perf`: prints throughput in MB/s (best of 3 runs) and peak memory, with the
# default options and with --all. When FLAMEGRAPH_DIR names a directory holding FlameGraph's stackcollapse-perf.pl,
# also runs the Perl collapser on the same input (best of 2), prints its MB/s and the ratio, and checks that
# `fold --perl-compat` prints the same bytes.
#
# Input: the perf script files of ../shared/conformance (event names made uniform so that every sample is folded),
# repeated to BENCH_MB megabytes (default 150) under ${TMPDIR:-/tmp}; without ../shared, a synthetic perf script.
# Generated, never committed. Figures depend on the machine and its load: compare runs on the same machine only.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
conformance="${CONFORMANCE_DIR:-$(dirname "$repo")/shared/conformance}"
size_mb="${BENCH_MB:-150}"
work="${TMPDIR:-/tmp}/stallprof-bench-fold"
mkdir -p "$work"
input="$work/perf-${size_mb}mb.txt"

if [ ! -s "$input" ]; then
    if [ -d "$conformance/brendangregg-FlameGraph/stackcollapse-perf/input" ]; then
        one="$work/one-round.txt"
        {
            for f in "$conformance"/brendangregg-FlameGraph/stackcollapse-perf/input/*.txt \
                "$conformance"/jonhoo-inferno/collapse-perf/input/{cpp-stacks-std-function,go-stacks,java-inline,single-event}.txt; do
                cat "$f"; echo
            done
            gunzip -c "$conformance/jonhoo-inferno/collapse-perf/input/example-perf-stacks.txt.gz"; echo
        } | sed -E '/^[^[:space:]#].*: *$/ s/[^ ]+: *$/cpu-clock:/' >"$one"
    else
        echo "bench: $conformance not found; using a synthetic perf script" >&2
        one="$work/one-round.txt"
        awk 'BEGIN { srand(7); for (e = 0; e < 20000; e++) {
                printf "app %d/%d [000] %d.%06d: 250000 cpu-clock:\n", 100 + e % 7, 200 + e % 13, e, e % 1000000
                depth = 5 + int(rand() * 25)
                for (d = depth; d > 0; d--) printf "\t    7f%010x %s_%d+0x%x (/usr/lib/libapp.so)\n", e * 64 + d, (d % 3 ? "_ZN3app6Worker3runEv" : "std::vector<int>::push_back(int const&)"), int(rand() * 5), d
                print "" } }' >"$one"
    fi
    : >"$input"
    while [ "$(stat -c %s "$input")" -lt $((size_mb * 1000000)) ]; do cat "$one" >>"$input"; done
fi
bytes="$(stat -c %s "$input")"
mb="$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1e6 }')"

(cd "$repo" && swift build -c release --product stallprof >/dev/null)
bin="$(cd "$repo" && swift build -c release --show-bin-path)/stallprof"

# best_of N command...: prints the shortest wall time in seconds and the peak RSS (KB) of that run.
best_of() {
    local n="$1"; shift
    local best="" rss="" t m
    for _ in $(seq "$n"); do
        /usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$work/out" 2>/dev/null
        read -r t m <"$work/time"
        if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then best="$t"; rss="$m"; fi
    done
    echo "$best $rss"
}
rate() { awk -v b="$bytes" -v t="$1" 'BEGIN { printf "%.0f", (t > 0 ? b / 1e6 / t : 0) }'; }

echo "input: $input ($mb MB)"
read -r t rss < <(best_of 3 "$bin" fold --format perf "$input")
ours="$t"
echo "stallprof fold --format perf:       $(rate "$t") MB/s ($t s, peak RSS $((rss / 1024)) MB)"
read -r t rss < <(best_of 3 "$bin" fold --format perf --all "$input")
ours_all="$t"
echo "stallprof fold --format perf --all: $(rate "$t") MB/s ($t s, peak RSS $((rss / 1024)) MB)"

if [ -n "${FLAMEGRAPH_DIR:-}" ] && [ -f "$FLAMEGRAPH_DIR/stackcollapse-perf.pl" ]; then
    perl_script="$FLAMEGRAPH_DIR/stackcollapse-perf.pl"
    read -r t rss < <(best_of 2 perl "$perl_script" "$input")
    cp "$work/out" "$work/perl.txt"
    echo "stackcollapse-perf.pl:              $(rate "$t") MB/s ($t s, peak RSS $((rss / 1024)) MB); ratio $(awk -v a="$t" -v b="$ours" 'BEGIN { printf "%.1f", a / b }')x"
    read -r t rss < <(best_of 2 perl "$perl_script" --all "$input")
    echo "stackcollapse-perf.pl --all:        $(rate "$t") MB/s ($t s); ratio $(awk -v a="$t" -v b="$ours_all" 'BEGIN { printf "%.1f", a / b }')x"
    if "$bin" fold --format perf --perl-compat "$input" 2>/dev/null | cmp -s - "$work/perl.txt"; then
        echo "output: fold --perl-compat equals stackcollapse-perf.pl byte for byte"
    else
        echo "output: fold --perl-compat DIFFERS from stackcollapse-perf.pl"
    fi
else
    echo "(set FLAMEGRAPH_DIR to FlameGraph's directory for the ratio against stackcollapse-perf.pl)"
fi
