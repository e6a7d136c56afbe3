#!/usr/bin/env bash
# The main job on a bundled sample: build, run stall-demo with the watchdog on (a busy stall, then a blocked
# one whose lock owner the report names), then cell-height (a layout loop across run-loop turns: a saturated
# main thread), report each capture, fold it with `stallprof fold` and print the hottest stacks, leaf end first.
# Full folded output goes to out/demo-*.folded (feed it to flamegraph.pl, inferno or speedscope), and a flame
# graph to out/demo-*.svg. (No `head` in the pipelines: with pipefail, a closed pipe would end the script.)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
# Only what the demo runs (the whole package is twelve executables).
for product in stallprof stall-demo cell-height; do swift build -c release --product "$product" 2>&1 | tail -1; done
bin=.build/release
out=${DEMO_OUT:-out}
mkdir -p "$out"
for stall in busy blocked saturated; do
    capture="$out/demo-$stall.stalls"
    echo
    if [ "$stall" = saturated ]; then
        app=(cell-height --seconds 3)
        selection=(--kind saturated)
    else
        app=(stall-demo --stall "$stall")
        selection=(--state "$stall")
    fi
    # stall-demo's workloads live in its StallSamples library, a module of their own: name both as the app.
    modules=()
    [ "${app[0]}" = stall-demo ] && modules=(--app-module stall_demo --app-module StallSamples)
    echo "== STALLPROF_OUTPUT=$capture ${app[*]}"
    STALLPROF_OUTPUT="$capture" "$bin/${app[0]}" "${app[@]:1}"
    echo "== stallprof report $capture"
    "$bin/stallprof" report --top 3 "${modules[@]}" "$capture"
    echo "== stallprof fold ${selection[*]} $capture -o $out/demo-$stall.folded"
    "$bin/stallprof" fold "${selection[@]}" "$capture" -o "$out/demo-$stall.folded"
    "$bin/stallprof" flamegraph --simplify-names --title "${app[0]}: $stall" "$capture" -o "$out/demo-$stall.svg"
    echo "$(wc -l < "$out/demo-$stall.folded") distinct stacks, $(awk '{ s += $NF } END { print s }' "$out/demo-$stall.folded") samples; the top ones, leaf frame first (... = frames toward the root):"
    awk '{ print $NF "\t" $0 }' "$out/demo-$stall.folded" | sort -t"$(printf '\t')" -k1,1 -rn | awk 'NR <= 2' | cut -f2- \
        | awk '{ n = $NF; sub(/ [^ ]+$/, ""); k = split($0, f, ";");
                 print "  " n " samples:";
                 for (i = k; i > k - 8 && i > 0; i--) print "      " f[i];
                 if (k > 8) print "      ... (" k - 8 " more frames)" }'
done
echo
echo "Flame graphs: $out/demo-busy.svg, $out/demo-blocked.svg, $out/demo-saturated.svg (open them in a browser)"
