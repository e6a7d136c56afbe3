#!/usr/bin/env bash
# Benchmark of `stallprof fold --format perf`: prints throughput in MB/s (best of 3 runs) and peak memory, with the
# default options and with --all, on two inputs. When FLAMEGRAPH_DIR names a directory holding FlameGraph's
# stackcollapse-perf.pl, also runs the Perl collapser on the same inputs (best of 2), prints its MB/s and the ratio,
# and checks that `fold --perl-compat` prints the same bytes.
#
# Inputs, generated under ${TMPDIR:-/tmp} (never committed), BENCH_MB megabytes each (default 150):
# - "repeated": the perf script files of ../shared/conformance (event names made uniform so that every sample is
#   folded) repeated; frame lines repeat like in a real profile (without ../shared, a synthetic perf script);
# - "unique addresses": the same with every frame line's address made unique (the line number), so no frame line
#   repeats and fold's cache of folded frame lines cannot help: the worst case.
# Figures depend on the machine and its load: compare runs on the same machine only.
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
        # Stacks drawn from a fixed call tree: each (caller, callee) call site has one return address, leaf
        # addresses vary, as in a real profile.
        awk 'BEGIN { srand(7); split("main run_loop dispatch handle_event parse_json decode_utf8 render layout draw_rect memcpy malloc free hash_lookup sort_keys", f, " ")
             for (e = 0; e < 20000; e++) {
                printf "app %d/%d [000] %d.%06d: 250000 cpu-clock:\n", 100, 200 + e % 13, e, e % 1000000
                depth = 5 + int(rand() * 20); caller = 1; line = ""
                for (d = 0; d < depth; d++) { callee = 1 + int(rand() * 14)
                    pc = (d == depth - 1) ? 4096 * callee + int(rand() * 4096) : 65536 * caller + 256 * callee + d
                    line = sprintf("\t    7f00%08x %s+0x%x (/usr/lib/libapp.so)\n", pc, f[callee], d) line; caller = callee }
                printf "%s\n", line } }' >"$one"
    fi
    : >"$input"
    while [ "$(stat -c %s "$input")" -lt $((size_mb * 1000000)) ]; do cat "$one" >>"$input"; done
fi
unique="$work/perf-${size_mb}mb-unique.txt"
if [ ! -s "$unique" ]; then
    perl -pe 's/^\s+[0-9a-f]+ /\t${.}x / if /^\s/' "$input" >"$unique"
fi

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

perl_script=""
if [ -n "${FLAMEGRAPH_DIR:-}" ] && [ -f "$FLAMEGRAPH_DIR/stackcollapse-perf.pl" ]; then
    perl_script="$FLAMEGRAPH_DIR/stackcollapse-perf.pl"
fi

for file in "$input" "$unique"; do
    bytes="$(stat -c %s "$file")"
    [ "$file" = "$input" ] && kind="repeated" || kind="unique addresses"
    echo "input ($kind): $file ($(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1e6 }') MB)"
    for options in "" "--all"; do
        read -r t rss < <(best_of 3 "$bin" fold --format perf $options "$file")
        ours="$t"
        printf "  %-38s %4s MB/s (%s s, peak RSS %s MB)\n" "stallprof fold --format perf $options" "$(rate "$t")" "$t" "$((rss / 1024))"
        [ -n "$perl_script" ] || continue
        read -r t rss < <(best_of 2 perl "$perl_script" $options "$file")
        cp "$work/out" "$work/perl.txt"
        printf "  %-38s %4s MB/s (%s s, peak RSS %s MB); ratio %sx\n" "stackcollapse-perf.pl $options" "$(rate "$t")" "$t" \
            "$((rss / 1024))" "$(awk -v a="$t" -v b="$ours" 'BEGIN { printf "%.1f", a / b }')"
        if "$bin" fold --format perf --perl-compat $options "$file" 2>/dev/null | cmp -s - "$work/perl.txt"; then
            echo "  output: fold --perl-compat $options equals stackcollapse-perf.pl byte for byte"
        else
            echo "  output: fold --perl-compat $options DIFFERS from stackcollapse-perf.pl"
        fi
    done
done
[ -n "$perl_script" ] || echo "(set FLAMEGRAPH_DIR to FlameGraph's directory for the ratio against stackcollapse-perf.pl)"
