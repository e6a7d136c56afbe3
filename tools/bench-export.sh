#!/usr/bin/env bash
# Memory and time of `stallprof export` (every format the CLI offers) and `stallprof report` against `stallprof fold`
# on the same input, in one run: issue 17's "memory bounded by the output's needs, not the input's size".
#
# Inputs, generated deterministically under ${TMPDIR:-/tmp}/stallprof-bench-export (kept between runs, never
# committed): STACKS distinct folded stacks (default 1500000, ~256 bytes a line, ~385 MB) and REPORT_STACKS
# distinct stacks (default 200000) for report. Their shape is a profile's: 5 root frames every stack shares, six
# levels of a call tree chosen by the stack's number in base 12 (siblings share their prefixes), then 0 to 4 more
# frames; Swift-like names (`Feed.Loader.fetch(_:)`, `closure #1 in App.Store.update()`) from a vocabulary of about
# 48,000; counts from 1 to 5000, mostly small.
#
# Each command runs RUNS times (default 1) with its output redirected to a file; printed: the shortest wall time,
# the CPU time (user + system) of that run, the largest peak RSS (/usr/bin/time's maximum resident set size), and
# each one's ratio to fold's beside the target (exports: RSS <= 1.5x, time <= 3x fold's on the 1.5 M input; report:
# time and RSS <= 2x fold's on the 200,000-stack input, given in generation order and byte-sorted as fold prints
# it). No figure is asserted: a ratio over its target is marked OVER, judged on CPU time and RSS (on a shared, loaded
# machine the wall time measures the other processes as much as this one). The outputs are checked: fold's line
# count; the speedscope export folded back equals fold's output; the pprof export's sample values add up to the
# folded total; the Chrome trace is one JSON object ending its `otherData`; and, with tools/export_validate.py
# (FORMATS: the directory with profile.proto and speedscope's schema, default ../shared/formats; protoc and Python
# jsonschema, as tools/check-export.sh installs them), every format of the 200,000-stack input. Exits 1 when an
# output is invalid.
# STALLPROF overrides the binary (default: a release build of this checkout). Figures depend on the machine and its
# load: compare runs on one machine only.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
stacks="${STACKS:-1500000}"
report_stacks="${REPORT_STACKS:-200000}"
runs="${RUNS:-1}"
work="${TMPDIR:-/tmp}/stallprof-bench-export"
mkdir -p "$work"

# gen N: N distinct folded stacks, the same bytes on every run and every awk (a Park-Miller generator).
gen() {
    awk -v stacks="$1" '
    function rnd() { state = (state * 16807) % 2147483647; return state / 2147483647 }
    function name(key,   m, t, f, c) {
        key = (key * 48271) % 2147483647
        m = key % nm; t = int(key / nm) % nt; f = int(key / (nm * nt)) % nf; c = int(key / (nm * nt * nf)) % 9
        return (c < 1 ? "closure #1 in " : "") mod[m + 1] "." typ[t + 1] "." fun[f + 1]
    }
    BEGIN {
        state = 20250101
        nm = split("App Feed UIKit Net Cache Base SwiftUI", mod, " ")
        nt = split("FeedVC CellModel Loader Store Router Decoder Layout Renderer Cache Session Request Parser " \
            "Timeline Observer Binding Graph Node Text Image View Stack Table List Grid Scroll Gesture Anim " \
            "Canvas Path Font Color Theme Coord Sync Queue Task Actor Worker Pool Buffer Stream Reader Writer " \
            "Index Query Filter Sorter Batch Diff Patch Diffable Snapshot Section Header Footer Badge Avatar " \
            "Player Track", typ, " ")
        nf = split("load() update() layout() draw(_:) decode(_:) encode(to:) fetch(_:) apply(_:) run() step() " \
            "body.getter init() deinit handle(_:) reload() render(in:) measure(_:) size(for:) cell(at:) " \
            "parse(_:) next() map(_:) flatMap(_:) filter(_:) reduce(_:_:) sort(by:) merge(_:) diff(_:) " \
            "commit() observe(_:) notify() send(_:) receive(_:) resume() suspend() cancel() wait() " \
            "lock() unlock() read(_:) write(_:) flush() hash(into:) ==(_:_:) append(_:) insert(_:at:) " \
            "remove(at:) contains(_:) index(of:) prepare() finish()", fun, " ")
        root = "start;main;RunLoop.run();__CFRunLoopRun;_dispatch_main_queue_drain"
        for (i = 0; i < stacks; i++) {
            line = root; key = 1; rest = i
            for (level = 0; level < 6; level++) {
                key = (key * 12 + rest % 12 + 7) % 1000003; rest = int(rest / 12)
                line = line ";" name(key * 31 + level)
            }
            tail = int(rnd() * 5)
            for (d = 0; d < tail; d++) line = line ";" name(int(rnd() * 1000003))
            print line, 1 + int(rnd() * rnd() * rnd() * 5000)
        }
    }'
}
big="$work/stacks-$stacks.folded"
small="$work/stacks-$report_stacks.folded"
sorted="$work/stacks-$report_stacks.sorted.folded"
[ -s "$big" ] || { echo "generating $big"; gen "$stacks" >"$big.tmp" && mv "$big.tmp" "$big"; }
[ -s "$small" ] || { gen "$report_stacks" >"$small.tmp" && mv "$small.tmp" "$small"; }
[ -s "$sorted" ] || { LC_ALL=C sort "$small" >"$sorted.tmp" && mv "$sorted.tmp" "$sorted"; }

if [ -z "${STALLPROF:-}" ]; then
    (cd "$repo" && swift build -c release --product stallprof >/dev/null)
    STALLPROF="$(cd "$repo" && swift build -c release --show-bin-path)/stallprof"
fi
formats="$("$STALLPROF" export --help | sed -n 's/.*--format FORMAT.*: \([a-z|-]*\)$/\1/p' | tr '|' ' ')"
[ -n "$formats" ] || formats="speedscope chrome-trace pprof"

# measure NAME OUT command...: runs the command RUNS times, output in OUT; sets wall, cpu (s) and rss (MB).
measure() {
    local name="$1" out="$2" e u s m
    shift 2
    wall="" cpu="" rss=0
    for _ in $(seq "$runs"); do
        /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" >"$out" 2>"$work/$name.err" \
            || { echo "bench-export: $name failed:" >&2; cat "$work/$name.err" >&2; exit 1; }
        read -r e u s m <"$work/time"
        if [ -z "$wall" ] || awk -v a="$e" -v b="$wall" 'BEGIN { exit !(a < b) }'; then
            wall="$e"
            cpu="$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')"
        fi
        m=$((m / 1024))
        [ "$m" -gt "$rss" ] && rss="$m"
    done
}

# row NAME TIME_TARGET RSS_TARGET: one line with the figures and their ratios to fold's (fold_wall, fold_rss).
row() {
    awk -v n="$1" -v tt="$2" -v rt="$3" -v w="$wall" -v c="$cpu" -v r="$rss" -v fw="$fold_wall" -v fc="$fold_cpu" \
        -v fr="$fold_rss" 'BEGIN {
        tw = fw > 0 ? w / fw : 0; tc = fc > 0 ? c / fc : 0; tr = fr > 0 ? r / fr : 0
        if (tt == "") { printf "  %-22s %8.2f s %8.2f s %7d MB\n", n, w, c, r; exit }
        printf "  %-22s %8.2f s %8.2f s %7d MB   %5.2fx %5.2fx %5.2fx   %sx %sx%s\n", n, w, c, r, tw, tc, tr, tt, rt,
            (tc > tt + 0 || tr > rt + 0) ? "  OVER" : "" }'
}
header() {
    printf "  %-22s %10s %10s %10s   %6s %6s %6s   %s\n" "command" "wall" "cpu" "peak RSS" "wall" "cpu" "RSS" \
        "target (cpu, RSS; ratios to fold's)"
}

invalid() { echo "bench-export: INVALID: $*" >&2; exit 1; }

echo "stallprof export and report against fold; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), runs $runs"
echo "input: $big: $(wc -l <"$big") stacks, $(($(stat -c %s "$big") / 1000000)) MB"
header
measure fold "$work/fold.out" "$STALLPROF" fold "$big"
fold_wall="$wall" fold_cpu="$cpu" fold_rss="$rss"
row "fold" "" ""
[ "$(wc -l <"$work/fold.out")" -eq "$stacks" ] || invalid "fold printed $(wc -l <"$work/fold.out") lines, not $stacks"
for format in $formats; do
    measure "$format" "$work/export.$format" "$STALLPROF" export --format "$format" "$big"
    row "export $format" 3 1.5
done

for input in "$small" "$sorted"; do
    echo "input: $input: $(wc -l <"$input") stacks"
    header
    measure fold-small "$work/fold-small.out" "$STALLPROF" fold "$input"
    fold_wall="$wall" fold_cpu="$cpu" fold_rss="$rss"
    row "fold" "" ""
    measure report "$work/report.out" "$STALLPROF" report "$input"
    row "report" 2 2
    measure report-json "$work/report.json" "$STALLPROF" report --json "$input"
    row "report --json" 2 2
done

# The outputs.
total="$(awk '{ s += $NF } END { printf "%d", s }' "$work/fold.out")"
for format in $formats; do
    out="$work/export.$format"
    case "$format" in
    speedscope)
        "$STALLPROF" fold "$out" >"$work/roundtrip.out" 2>/dev/null
        cmp -s "$work/roundtrip.out" "$work/fold.out" || invalid "fold of the speedscope export differs from fold"
        echo "ok   speedscope: folded back, it is fold's output" ;;
    pprof)
        python3 - "$out" "$total" <<'EOF' || invalid "pprof export"
import gzip, sys
data = gzip.open(sys.argv[1]).read()
def varint(buf, i):
    shift = value = 0
    while True:
        byte = buf[i]; i += 1
        value |= (byte & 0x7F) << shift; shift += 7
        if byte < 0x80: return value, i
i, total, samples = 0, 0, 0
while i < len(data):
    key, i = varint(data, i)
    if key & 7 == 0:
        _, i = varint(data, i); continue
    length, i = varint(data, i)
    if key >> 3 == 2:  # Sample: field 2 packed values, the first is the count
        j, end = i, i + length
        while j < end:
            inner, j = varint(data, j)
            if inner & 7 == 0:
                _, j = varint(data, j); continue
            size, j = varint(data, j)
            if inner >> 3 == 2:
                total += varint(data, j)[0]; samples += 1
            j += size
    i += length
if total != int(sys.argv[2]):
    print(f"pprof: sample values add up to {total}, not {sys.argv[2]}"); sys.exit(1)
print(f"ok   pprof: {samples} samples, values add up to the folded total {total}")
EOF
        ;;
    chrome-trace)
        head -c 15 "$out" | grep -q '^{"traceEvents":' && tail -c 200 "$out" | grep -q '"otherData":{.*}}$' \
            || invalid "the Chrome trace is not one JSON object with traceEvents ... otherData"
        echo "ok   chrome-trace: one JSON object, traceEvents to otherData" ;;
    esac
done
validator="$repo/tools/export_validate.py"
formats_dir="${FORMATS:-$(dirname "$repo")/shared/formats}"
py="$repo/.build/export-venv/bin/python"  # tools/check-export.sh's venv, else the system's Python
[ -x "$py" ] || py=python3
if [ -f "$formats_dir/profile.proto" ] && command -v protoc >/dev/null && "$py" -c 'import jsonschema' 2>/dev/null; then
    small_total="$(awk '{ s += $NF } END { printf "%d", s }' "$work/fold-small.out")"
    for format in $formats; do
        "$STALLPROF" export --format "$format" "$small" >"$work/small.$format"
        args=()
        [ "$format" = pprof ] && args=("$small_total")
        FORMATS="$formats_dir" "$py" "$validator" "$format" "$work/small.$format" "${args[@]}" \
            | sed 's/^/     /' || invalid "export_validate.py $format"
    done
else
    echo "skipped: export_validate.py of the $report_stacks-stack exports (needs $formats_dir, protoc, jsonschema)"
fi
