#!/usr/bin/env bash
# Source lines: how long `stallprof fold --lines --inline` takes to name every frame of real captures with its
# function, file, line and inlined frames, against the toolchain's llvm-symbolizer (what pprof runs) given the same
# addresses in one batch (`llvm-symbolizer --inlining`, one `"IMAGE" 0xADDRESS` line per distinct frame, from
# stallprof-bench-symbolize), in one run; and against `stallprof fold` without lines (the cost lines add).
#
# Captures, made once under ${TMPDIR:-/tmp}/stallprof-bench-symbolize (kept between runs, never committed): the
# release stall-demo sampled every millisecond (STALLPROF_INTERVAL_MS=1): a busy stall of BUSY_MS (default 40000,
# about 16,000 samples) and a flood of short main-queue blocks of FLOOD_MS (default 10000). Each command runs RUNS
# times (default 5); printed: the shortest wall time, the CPU time (user + system) of that run, the peak RSS, and the
# ratio to llvm-symbolizer's; then what lines and inlined frames add (the fold with them less the fold without) beside
# the target, at most 1.5x llvm-symbolizer's CPU time; then `stallprof symbolicate` of the busy capture, and the
# fold with lines of both captures symbolicated (names and lines from the capture, no image file read; checked to
# print the same). No figure is asserted: a ratio over its target is marked OVER. The outputs are checked: both name the same number of frames with a line.
# STALLPROF overrides the binary (default: a release build of this checkout). Compare runs on one machine only.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
runs="${RUNS:-5}"
work="${TMPDIR:-/tmp}/stallprof-bench-symbolize"
mkdir -p "$work"
cd "$repo"
tools/setup.sh
swift build -c release --product stallprof >/dev/null
swift build -c release --product stall-demo >/dev/null
swift build -c release --product stallprof-bench-symbolize >/dev/null
bin="$(swift build -c release --show-bin-path)"
STALLPROF="${STALLPROF:-$bin/stallprof}"
symbolizer="$(dirname "$(readlink -f "$(command -v swift)")")/llvm-symbolizer"
[ -x "$symbolizer" ] || { echo "bench-symbolize: no llvm-symbolizer beside swift" >&2; exit 1; }

busy="$work/busy.stalls" flood="$work/flood.stalls"
# A capture is kept only while the stall-demo that made it is the same build.
stamp="$(sha256sum "$bin/stall-demo" | cut -c1-16)"
if [ "$(cat "$work/stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -f "$busy" "$flood"
    echo "making the captures (about $(( (${BUSY_MS:-40000} + ${FLOOD_MS:-10000}) / 1000 + 5 )) s)..."
    STALLPROF_OUTPUT="$busy" STALLPROF_INTERVAL_MS=1 "$bin/stall-demo" --stall busy --stall-ms "${BUSY_MS:-40000}" >/dev/null
    STALLPROF_OUTPUT="$flood" STALLPROF_INTERVAL_MS=1 "$bin/stall-demo" --stall flood --stall-ms "${FLOOD_MS:-10000}" >/dev/null
    echo "$stamp" >"$work/stamp"
fi
"$bin/stallprof-bench-symbolize" "$busy" >"$work/addresses"
"$bin/stallprof-bench-symbolize" "$flood" >>"$work/addresses"
sort -u -o "$work/addresses" "$work/addresses"
samples="$("$STALLPROF" report --json "$busy" "$flood" | python3 -c 'import json, sys; print(sum(e["samples"] for e in json.load(sys.stdin)["episodes"]))')"
echo "captures: $busy, $flood: $samples samples, $(wc -l <"$work/addresses") distinct frame addresses in files"

# measure NAME OUT COMMAND...: the shortest wall time of RUNS runs (wall), its CPU time (cpu), the peak RSS (rss, MB),
# in microseconds' resolution (Python's getrusage of each child; /usr/bin/time counts CPU in 10 ms ticks).
measure() {
    local name="$1" out="$2"
    shift 2
    read -r wall cpu rss < <(python3 - "$runs" "${input:-/dev/null}" "$out" "$work/$name.err" "$@" <<'PY'
import resource, subprocess, sys, time
runs, stdin, out, err, command = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
best = None
peak = 0
for _ in range(runs):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    with open(stdin, "rb") as i, open(out, "wb") as o, open(err, "wb") as e:
        status = subprocess.run(command, stdin=i, stdout=o, stderr=e).returncode
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if status != 0:
        sys.exit(f"bench-symbolize: {command[0]} failed ({status}): see {err}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    peak = max(peak, after.ru_maxrss // 1024)
    if best is None or wall < best[0]:
        best = (wall, cpu)
print(f"{best[0]:.4f} {best[1]:.4f} {peak}")
PY
)
}

row() {
    awk -v n="$1" -v t="$2" -v w="$wall" -v c="$cpu" -v r="$rss" -v pw="$peer_wall" -v pc="$peer_cpu" 'BEGIN {
        tw = pw > 0 ? w / pw : 0; tc = pc > 0 ? c / pc : 0
        printf "  %-38s %8.4f s %8.4f s %6d MB   %5.2fx %5.2fx", n, w, c, r, tw, tc
        if (t != "") printf "   <= %sx%s", t, (tc > t + 0 ? "  OVER" : "")
        printf "\n" }'
}

echo "runs: $runs; the shortest wall time, its CPU time, peak RSS; ratios to llvm-symbolizer's wall and CPU time"
input="$work/addresses" measure llvm-symbolizer "$work/llvm.out" "$symbolizer" --inlining --no-demangle -s
peer_wall="$wall" peer_cpu="$cpu"
row "llvm-symbolizer --inlining (batch)" ""
measure names "$work/names.out" "$STALLPROF" fold "$busy" "$flood"
row "stallprof fold (names only)" ""
names_wall="$wall" names_cpu="$cpu"
measure lines "$work/lines.out" "$STALLPROF" fold --lines --inline "$busy" "$flood"
row "stallprof fold --lines --inline" ""
# What lines cost: the fold with lines less the fold without (reading the captures, folding and naming are the
# same in both), against llvm-symbolizer, which only symbolicates.
wall="$(awk -v a="$wall" -v b="$names_wall" 'BEGIN { printf "%.4f", a - b }')"
cpu="$(awk -v a="$cpu" -v b="$names_cpu" 'BEGIN { printf "%.4f", a - b }')"
rss=0
row "  lines and inlines alone (difference)" 1.5
# The same captures made self-contained (`stallprof symbolicate`, timed once): folding them reads no image file.
sym_busy="$work/busy-symbolicated.stalls" sym_flood="$work/flood-symbolicated.stalls"
mkdir -p "$work/symbolicated"
"$STALLPROF" symbolicate "$busy" -o "$sym_busy" 2>/dev/null
"$STALLPROF" symbolicate "$flood" -o "$sym_flood" 2>/dev/null
measure symbolicate "$work/symbolicate.out" "$STALLPROF" symbolicate "$busy" -o "$work/symbolicated/busy.stalls"
row "stallprof symbolicate (busy capture)" ""
measure symbolicated "$work/symbolicated.out" "$STALLPROF" fold --lines --inline "$sym_busy" "$sym_flood"
row "  fold --lines --inline, symbolicated" ""
cmp -s "$work/symbolicated.out" "$work/lines.out" \
    || { echo "bench-symbolize: the symbolicated captures fold otherwise" >&2; exit 1; }
# Both name frames with lines: llvm-symbolizer's lines with a line number, stallprof's distinct frames with one.
with_line="$(grep -cE ':[1-9][0-9]*:[0-9]+$' "$work/llvm.out" || true)"
ours="$(tr ';' '\n' <"$work/lines.out" | sed 's/ [0-9]*$//' | grep -cE '\.[a-z]+:[1-9][0-9]*$' || true)"
echo "frames with a line: llvm-symbolizer $with_line (per address and inlined frame), stallprof $ours (distinct frame names)"
[ "$ours" -gt 0 ] && [ "$with_line" -gt 0 ] || { echo "bench-symbolize: no lines found" >&2; exit 1; }
