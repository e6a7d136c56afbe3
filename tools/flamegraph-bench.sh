#!/usr/bin/env bash
# Large-input benchmark of `stallprof flamegraph`: renders N unique stacks (default 100,000, generated with a fixed
# seed) with a release build and prints the time, peak memory, SVG size and frames drawn. When FlameGraph's scripts
# are available (FLAMEGRAPH_DIR=/path/to/FlameGraph, containing flamegraph.pl), renders the same folded input with
# flamegraph.pl and prints the speed-up (goal: at least 5x). When Chromium is installed, also times loading the
# SVG and running a search in it.
# Usage: tools/flamegraph-bench.sh [N]     Environment: FLAMEGRAPH_DIR, KEEP=1 to keep the files in out/.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-100000}
swift build -c release --product stallprof >/dev/null
bin=$(swift build -c release --show-bin-path)/stallprof
work=$(mktemp -d)
[ "${KEEP:-0}" = 1 ] && work=out/flamegraph-bench && mkdir -p "$work"
trap '[ "${KEEP:-0}" = 1 ] || rm -rf "$work"' EXIT

python3 - "$count" >"$work/input.folded" <<'PY'
import random, sys
rng = random.Random(5)
n = int(sys.argv[1])
modules = ["UIKit", "SwiftUI", "Foundation", "CoreText", "App", "Combine", "libdispatch", "CoreFoundation"]
names = ["%s.%s%s.%s(_:)" % (rng.choice(modules), rng.choice(["Text", "Layout", "View", "Stack", "Graph", "Cache"]),
         i, rng.choice(["measure", "layout", "update", "render", "resolve", "draw"])) for i in range(3000)]
seen = set()
spine = ["main", "UIApplicationMain", "CFRunLoopRunSpecific", "__CFRunLoopRun"]
while len(seen) < n:
    depth = rng.randint(4, 45)
    stack = spine + [names[min(int(rng.paretovariate(1.2)) * (d + 1) % len(names), len(names) - 1)]
                     for d in range(depth)]
    stack = ";".join(stack)
    if stack in seen:
        continue
    seen.add(stack)
    print("%s %d" % (stack, rng.randint(1, 50)))
PY
size=$(du -m "$work/input.folded" | cut -f1)
echo "input: $count unique stacks, ${size} MB of folded text"

measure() {  # measure NAME OUTPUT COMMAND...: prints seconds and peak RSS
    local name=$1 out=$2
    shift 2
    local start end
    start=$(date +%s.%N)
    /usr/bin/time -f "%M" -o "$work/$name.rss" "$@" >"$out"
    end=$(date +%s.%N)
    python3 -c "print('%.2f' % ($end - $start))" >"$work/$name.seconds"
}
measure stallprof "$work/stallprof.svg" "$bin" flamegraph "$work/input.folded"
python3 - "$work/stallprof.svg" "$(cat "$work/stallprof.seconds")" "$(cat "$work/stallprof.rss")" <<'PY'
import os, sys
sys.path.insert(0, "tools")
import flamegraph_svg
svg, seconds, rss = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
frames = flamegraph_svg.read(svg)["frames"]
print("stallprof flamegraph: %.2f s, peak RSS %d MB, SVG %.1f MB, %d frames drawn (depth %d)" % (
    seconds, rss // 1024, os.path.getsize(svg) / 1e6, len(frames), max(f[3] for f in frames)))
PY

# How heavy the SVG is for a browser: headless Chromium loads it and runs a search (?s=), start to end.
chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$chromium" ]; then
    start=$(date +%s.%N)
    timeout 300 "$chromium" --headless --no-sandbox --disable-gpu --user-data-dir="$work/chromium" \
        --virtual-time-budget=1000 --dump-dom "file://$(realpath "$work/stallprof.svg")?s=layout" \
        2>/dev/null >"$work/dom.html" || true
    end=$(date +%s.%N)
    matched=$(grep -o 'Matched: [0-9.]*%' "$work/dom.html" || echo "no search result")
    python3 -c "print('chromium: load + search of the SVG in %.2f s (%s)' % ($end - $start, '$matched'))"
fi

if [ -n "${FLAMEGRAPH_DIR:-}" ] && [ -f "$FLAMEGRAPH_DIR/flamegraph.pl" ]; then
    measure perl "$work/flamegraph-pl.svg" perl "$FLAMEGRAPH_DIR/flamegraph.pl" "$work/input.folded"
    python3 - "$(cat "$work/stallprof.seconds")" "$(cat "$work/perl.seconds")" "$(cat "$work/perl.rss")" \
        "$work/flamegraph-pl.svg" <<'PY'
import os, sys
ours, theirs, rss, svg = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
print("flamegraph.pl:        %.2f s, peak RSS %d MB, SVG %.1f MB" % (theirs, rss // 1024, os.path.getsize(svg) / 1e6))
print("speed-up: %.1fx (goal: at least 5x)" % (theirs / max(ours, 0.01)))
PY
else
    echo "flamegraph.pl: not run (set FLAMEGRAPH_DIR to a FlameGraph checkout to compare)"
fi
