#!/usr/bin/env bash
# Runs every case of ../shared/conformance/MANIFEST.tsv that `stallprof fold` covers and prints
# "N passed, N failed" per peer and tool. Skipped (exit 0) when the conformance directory is missing; exits 1 when a
# case that should pass fails.
#
# Environment: CONFORMANCE_DIR (default: $(dirname repo)/shared/conformance), STALLPROF (default: the debug build).
#
# Rules (docs/FOLD.md, "Conformance"):
# - Expected files are compared byte for byte, except that a missing newline at the end of an expected file is
#   added (inferno's test harness compares lines; basic-collapsed.txt lacks it).
# - FlameGraph stackcollapse-perf: `fold --format perf --perl-compat OPTIONS`, byte-compared. --perl-compat
#   reproduces Perl's bugs that KNOWN_DIVERGENCES.tsv says inferno fixed; the one that shows in this matrix is the
#   last stack of 6 of the 13 inputs, which no blank line ends: Perl drops it, stallprof keeps it by default (like
#   inferno; see docs/FOLD.md). Each case is also run without --perl-compat: its output must equal the
#   --perl-compat output plus the last unterminated stack folded alone. The 8 expected files that
#   KNOWN_DIVERGENCES.tsv lists as stale (java-faults-01, java-stacks-01, java-stacks-02, vertx-stacks-01 with --pid
#   and --tid; recorded before FlameGraph PR #147) are counted apart: they are compared against FlameGraph HEAD
#   behaviour, i.e. the expected file with HEAD's rule applied (a frame that starts with "L" and contains "/" loses
#   the "L" when the process name starts with "java"), merged and re-sorted.
# - inferno collapse-perf: `fold --format perf --demangle OPTIONS` (inferno always repairs partially demangled Rust
#   symbols; stallprof does it under --demangle so that its default output stays equal to FlameGraph's).
#   Warning cases: exit 0 and exactly one unrecognized line reported.
# - inferno collapse-sample: `fold --format sample --filter-waiting OPTIONS` (both peers drop waiting stacks; stallprof
#   keeps them unless asked). Error cases: exit 65. Warning cases: exit 0 and a warning. inferno keeps only the last
#   count of a stack that appears at several call sites (sample.txt: 1411 samples of 1429); stallprof sums them, so
#   these cases check the stacks byte for byte and that every count is at least inferno's and the total is the
#   input's (the sum of the call tree's self counts, 1429 with waiting threads filtered, as stackcollapse-sample.awk).
# - inferno collapse-recursive: `fold --format folded --merge-recursion`.
# - inferno collapse-guess: `fold` (auto); error cases exit 65; xctrace and dtrace are not formats fold reads
#   (not counted).
# - speedscope import-folded / import-perf-script / speedscope-json-examples: inputs only; `fold` must exit 0
#   ("invalid" inputs: 0 or 65). Its trace-event and pprof examples are formats fold does not read (not counted).
set -uo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
dir="${CONFORMANCE_DIR:-$(dirname "$repo")/shared/conformance}"
if [ ! -f "$dir/MANIFEST.tsv" ]; then
    echo "conformance: $dir/MANIFEST.tsv not found; skipped"
    exit 0
fi
bin="${STALLPROF:-}"
if [ -z "$bin" ]; then
    (cd "$repo" && swift build --product stallprof >/dev/null) || { echo "conformance: build failed" >&2; exit 1; }
    bin="$(cd "$repo" && swift build --show-bin-path)/stallprof"
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
declare -A passed failed
stale_passed=0 stale_failed=0 not_covered=0
default_same=0 default_last_stack=0 default_other=0
failures=()

record() { # key result description
    if [ "$2" = ok ]; then passed[$1]=$(( ${passed[$1]:-0} + 1 ))
    else failed[$1]=$(( ${failed[$1]:-0} + 1 )); failures+=("$1: $3"); fi
}

# HEAD's Java rule applied to a stale expected file.
head_rule() {
    awk '{ n = split($0, f, ";"); line = f[1]
           for (i = 2; i <= n; i++) { fr = f[i]
               if (f[1] ~ /^java/ && fr ~ /^L/ && index(fr, "/") > 0 && i < n) fr = substr(fr, 2)
               else if (i == n && f[1] ~ /^java/) { sp = match(fr, / [0-9.]+$/); name = substr(fr, 1, sp - 1)
                   if (name ~ /^L/ && index(name, "/") > 0) fr = substr(fr, 2) }
               line = line ";" fr }
           c = line; sub(/.* /, "", c); s = line; sub(/ [0-9.]+$/, "", s); sum[s] += c }
         END { for (s in sum) print s " " sum[s] }' "$1" | LC_ALL=C sort
}

while IFS=$'\t' read -r peer tool input expected opts; do
    [ "$peer" = peer ] && continue
    key="$peer $tool"
    in="$dir/$input"
    if [[ "$input" == *.gz ]]; then gunzip -c "$in" >"$tmp/input"; in="$tmp/input"; fi
    args=()
    case "$peer/$tool" in
        brendangregg-FlameGraph/stackcollapse-perf) args=(--format perf --perl-compat $opts) ;;
        jonhoo-inferno/collapse-perf) args=(--format perf --demangle); [[ "$opts" == --* ]] && args+=("${opts%% *}") ;;
        jonhoo-inferno/collapse-sample)
            [[ "$opts" == *"benchmark input only"* ]] && { not_covered=$((not_covered + 1)); continue; }
            args=(--format sample --filter-waiting); [[ "$opts" == --* ]] && args+=("${opts%% *}") ;;
        jonhoo-inferno/collapse-recursive) args=(--format folded --merge-recursion) ;;
        jonhoo-inferno/collapse-guess)
            [[ "$input" == *xctrace* || "$input" == *dtrace* ]] && { not_covered=$((not_covered + 1)); continue; }
            [[ "$input" == *sample* ]] && args+=(--filter-waiting)
            [[ "$input" == *collapse-perf* ]] && args+=(--demangle) ;;
        jlfwong-speedscope/import-folded | jlfwong-speedscope/import-perf-script) ;;
        jlfwong-speedscope/speedscope-json-examples) ;;
        *) not_covered=$((not_covered + 1)); continue ;;
    esac
    "$bin" fold "${args[@]}" "$in" >"$tmp/out" 2>"$tmp/err"
    status=$?
    if [ "$tool" = stackcollapse-perf ]; then
        # The default mode must differ from Perl only by the last stack when no blank line ends it, i.e.
        # default output == Perl-compatible output + that stack folded alone (a failure otherwise).
        "$bin" fold --format perf $opts "$in" >"$tmp/default" 2>/dev/null
        if cmp -s "$tmp/default" "$tmp/out"; then default_same=$((default_same + 1))
        else
            awk 'BEGIN { RS = "" } { last = $0 } END { print last }' "$in" >"$tmp/last"
            "$bin" fold --format perf $opts "$tmp/last" >"$tmp/last.folded" 2>/dev/null
            if "$bin" fold --format folded "$tmp/out" "$tmp/last.folded" 2>/dev/null | cmp -s - "$tmp/default"; then
                default_last_stack=$((default_last_stack + 1))
            else default_other=$((default_other + 1)); failures+=("$key (default mode): $(basename "$input") $opts"); fi
        fi
    fi
    what="$(basename "$input") ${args[*]}"
    if [ "$expected" != "-" ]; then
        exp="$dir/$expected"
        name="$(basename "$expected")"
        if [ "$tool" = stackcollapse-perf ] && [[ "$name" =~ ^perf-(java-faults-01|java-stacks-01|java-stacks-02|vertx-stacks-01)-collapsed-(pid|tid)\.txt$ ]]; then
            if [ $status -eq 0 ] && head_rule "$exp" | cmp -s - "$tmp/out"; then stale_passed=$((stale_passed + 1))
            else stale_failed=$((stale_failed + 1)); failures+=("$key (stale, HEAD rule): $what"); fi
            continue
        fi
        { cat "$exp"; [ -n "$(tail -c 1 "$exp")" ] && echo; } >"$tmp/expected"
        if [ "$tool" = collapse-sample ] || { [ "$tool" = collapse-guess ] && [[ "$input" == *sample* ]]; }; then
            same_stacks() { cmp -s <(sed 's/ [0-9.]*$//' "$1") <(sed 's/ [0-9.]*$//' "$2"); }
            counts_ok() { paste -d' ' <(awk '{print $NF}' "$1") <(awk '{print $NF}' "$2") | awk '$1 < $2 {bad=1} END {exit bad}'; }
            if [ $status -eq 0 ] && same_stacks "$tmp/out" "$tmp/expected" && counts_ok "$tmp/out" "$tmp/expected" &&
                [ "$(awk '{s+=$NF} END {print s}' "$tmp/out")" = 1429 ]; then record "$key" ok
            else record "$key" fail "$what (exit $status)"; fi
            continue
        fi
        if [ $status -eq 0 ] && cmp -s "$tmp/expected" "$tmp/out"; then record "$key" ok; else record "$key" fail "$what (exit $status)"; fi
    elif [[ "$opts" == *"expect error"* ]] && [[ "$opts" != *"no error"* ]]; then
        [ $status -eq 65 ] && record "$key" ok || record "$key" fail "$what: expected exit 65, got $status"
    elif [[ "$opts" == *"exactly 1 warning"* ]]; then
        if [ $status -eq 0 ] && grep -q ": 1 unrecognized line skipped" "$tmp/err"; then record "$key" ok
        else record "$key" fail "$what: expected exit 0 and one unrecognized line"; fi
    elif [[ "$opts" == *"expect warning"* ]]; then
        if [ $status -eq 0 ] && grep -q "warning:" "$tmp/err"; then record "$key" ok
        else record "$key" fail "$what: expected exit 0 and a warning"; fi
    elif [[ "$opts" == *"invalid"* ]]; then
        [ $status -eq 0 ] || [ $status -eq 65 ] && record "$key" ok || record "$key" fail "$what: exit $status"
    else
        [ $status -eq 0 ] && record "$key" ok || record "$key" fail "$what: exit $status: $(head -c 200 "$tmp/err")"
    fi
done <"$dir/MANIFEST.tsv"

total_failed=$((stale_failed + default_other))
for key in $(printf '%s\n' "${!passed[@]}" "${!failed[@]}" | tr ' ' '|' | sort -u); do
    k="${key//|/ }"
    line="$k: ${passed[$k]:-0} passed, ${failed[$k]:-0} failed"
    [ "$k" = "brendangregg-FlameGraph stackcollapse-perf" ] &&
        line+="; stale expected files (checked against HEAD behaviour): $stale_passed passed, $stale_failed failed"
    echo "$line"
    total_failed=$((total_failed + ${failed[$k]:-0}))
done
echo "brendangregg-FlameGraph stackcollapse-perf without --perl-compat: $default_same identical," \
    "$default_last_stack differ only by the kept last stack, $default_other differ otherwise"
echo "not covered by fold (other tools or formats): $not_covered cases"
for f in "${failures[@]}"; do echo "FAILED $f"; done
[ "$total_failed" -eq 0 ]
