#!/usr/bin/env bash
# Benchmark of `stallprof diff` against FlameGraph's difffolded.pl on the same inputs, in one run.
#
# Generates two folded files of STACKS distinct stacks each (default 20000; 3/4 of the stacks shared, counts
# differing) under ${TMPDIR:-/tmp}, times `stallprof diff BEFORE AFTER` and `difffolded.pl BEFORE AFTER` (best of 5
# each), checks that both print the same lines (the same set after sorting; difffolded.pl prints hash order) and
# prints both times and the ratio, with stallprof's start-up time (`stallprof --help`), which bounds the ratio on
# small inputs. No time is asserted. FLAMEGRAPH_DIR names FlameGraph's directory (default:
# ../shared/peers/FlameGraph next to the repository); without difffolded.pl, only stallprof is timed and the ratio
# is skipped with a message. STALLPROF overrides the binary (default: a release build of this checkout).
# Exits 1 when the outputs differ. Figures depend on the machine and its load: compare runs on one machine only.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
flamegraph="${FLAMEGRAPH_DIR:-$(dirname "$repo")/shared/peers/FlameGraph}"
stacks="${STACKS:-20000}"
work="${TMPDIR:-/tmp}/stallprof-bench-diff"
mkdir -p "$work"
before="$work/before-$stacks.folded"
after="$work/after-$stacks.folded"

# Stacks of 5 to 24 frames from a fixed vocabulary, each made distinct by its leaf.
gen() { # seed first last
    awk -v seed="$1" -v first="$2" -v last="$3" 'BEGIN { srand(seed)
        split("main run_loop dispatch handle_event parse_json decode_utf8 render layout draw_rect memcpy malloc free hash_lookup sort_keys", f, " ")
        for (i = first; i < last; i++) { srand(i); depth = 4 + int(rand() * 20); line = "main"
            for (d = 0; d < depth; d++) line = line ";" f[1 + int(rand() * 14)]
            srand(seed * 100003 + i); printf "%s;leaf_%d %d\n", line, i, 1 + int(rand() * 1000) } }'
}
quarter=$((stacks / 4))
[ -s "$before" ] || gen 1 0 "$stacks" >"$before"
[ -s "$after" ] || gen 2 "$quarter" $((stacks + quarter)) >"$after"

if [ -z "${STALLPROF:-}" ]; then
    (cd "$repo" && swift build -c release --product stallprof >/dev/null)
    STALLPROF="$(cd "$repo" && swift build -c release --show-bin-path)/stallprof"
fi

# best_of N OUT command...: runs the command N times with its output in OUT; prints the shortest wall time (s).
best_of() {
    local n="$1" out="$2"; shift 2
    local best="" start end t
    for _ in $(seq "$n"); do
        start=$(date +%s.%N)
        "$@" >"$out"
        end=$(date +%s.%N)
        t=$(echo "$end - $start" | bc -l)
        if [ -z "$best" ] || [ "$(echo "$t < $best" | bc -l)" = 1 ]; then best="$t"; fi
    done
    printf '%.3f\n' "$best"
}

echo "inputs: $(wc -l <"$before") and $(wc -l <"$after") stacks ($work)"
ours=$(best_of 5 "$work/stallprof.out" "$STALLPROF" diff "$before" "$after")
echo "stallprof diff:  ${ours} s  ($(wc -l <"$work/stallprof.out") lines)"
echo "stallprof start-up (--help): $(best_of 3 /dev/null "$STALLPROF" --help) s"
if [ ! -f "$flamegraph/difffolded.pl" ]; then
    echo "difffolded.pl not found in $flamegraph (set FLAMEGRAPH_DIR): no comparison"
    exit 0
fi
theirs=$(best_of 5 "$work/difffolded.out" perl "$flamegraph/difffolded.pl" "$before" "$after")
echo "difffolded.pl:   ${theirs} s  ($(wc -l <"$work/difffolded.out") lines)"
if ! cmp -s <(LC_ALL=C sort "$work/stallprof.out") <(LC_ALL=C sort "$work/difffolded.out"); then
    echo "DIFFERENT output: compare $work/stallprof.out with $work/difffolded.out" >&2
    exit 1
fi
echo "same lines: yes"
echo "ratio (difffolded.pl / stallprof): $(echo "scale=2; $theirs / $ours" | bc -l)x"
