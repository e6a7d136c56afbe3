#!/usr/bin/env bash
# The main job on a bundled sample: build, run stall-demo with the watchdog on (a busy stall, then a blocked
# one), fold each capture and print the hottest stacks.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
swift build -c release
bin=.build/release
out=${DEMO_OUT:-out}
mkdir -p "$out"
for stall in busy blocked; do
    capture="$out/demo-$stall.stalls"
    echo "== stall-demo --stall $stall (capture: $capture)"
    STALLPROF_OUTPUT="$capture" "$bin/stall-demo" --stall "$stall"
    "$bin/stallprof" fold "$capture" -o "$out/demo-$stall.folded"
    echo "-- top stacks (samples, leaf frames last):"
    sort -t' ' -k2 -rn "$out/demo-$stall.folded" 2>/dev/null | awk '{ n = $NF; $NF = ""; print n "  " $0 }' \
        | sort -rn | head -3 | cut -c1-400
    echo
done
