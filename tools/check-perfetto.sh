#!/usr/bin/env bash
# Loads the long-press sample's Chrome trace (`stallprof export --format chrome-trace`) into Perfetto's own trace
# processor and checks what Perfetto imports: touchDown, longPress, the busy stall and touchUp on one thread track,
# in that order, none dropped (stats: slice_drop_overlapping_complete_event, misplaced_end_event, json errors).
# The trace processor: $TRACE_PROCESSOR_SHELL if set, else the `perfetto` Python package (PyPI, in a venv under
# .build) and the shell binary it downloads (needs commondatastorage.googleapis.com). Without either it prints
# "skipped: ..." and exits 0. Usage: tools/check-perfetto.sh [TRACE.json]   (STALLPROF_BIN=.build/debug)
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
bin="${STALLPROF_BIN:-.build/debug}"
out="$root/.build/check-perfetto"
mkdir -p "$out"
trace="${1:-}"
if [ -z "$trace" ]; then
    if [ ! -x "$bin/stallprof" ] || [ ! -x "$bin/long-press" ]; then
        swift build --product long-press >/dev/null
        swift build --product stallprof >/dev/null
    fi
    rm -f "$out/press.stalls"
    STALLPROF_OUTPUT="$out/press.stalls" "$bin/long-press" >/dev/null
    "$bin/stallprof" export --format chrome-trace "$out/press.stalls" -o "$out/press.trace.json"
    trace="$out/press.trace.json"
fi
venv="$root/.build/perfetto-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import perfetto.trace_processor' 2>/dev/null; then
    rm -rf "$venv"
    { python3 -m venv "$venv" && "$venv/bin/pip" install -q perfetto; } >/dev/null 2>&1 \
        || { echo "check-perfetto: skipped: could not pip install perfetto into $venv"; exit 0; }
fi
"$venv/bin/python" - "$trace" 2>"$out/trace-processor.log" <<'PY'
import os, sys
from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig

path = sys.argv[1]
shell = os.environ.get("TRACE_PROCESSOR_SHELL")
try:
    config = TraceProcessorConfig(bin_path=shell) if shell else TraceProcessorConfig()
    tp = TraceProcessor(trace=path, config=config)
except Exception as error:  # the shell binary could not be had (offline) or did not start
    print(f"check-perfetto: skipped: no trace processor ({type(error).__name__}: {str(error).splitlines()[0][:160]})")
    sys.exit(0)
try:
    bad = [(r.name, r.value) for r in tp.query(
        "select name, value from stats where value > 0 and (severity in ('error', 'data_loss') "
        "or name like '%overlapping%' or name like 'misplaced%' or name in ('json_parser_failure', "
        "'json_tokenizer_failure'))")]  # not json_display_time_unit: info, displayTimeUnit is only a UI hint
    rows = list(tp.query(
        "select s.ts, s.dur, s.name, s.depth, t.tid from slice s join thread_track tt on s.track_id = tt.id "
        "join thread t using (utid) order by s.ts, s.depth"))
    try:  # JSON stack samples, where this trace processor imports them (reported, not required)
        samples = next(iter(tp.query("select count(*) as n from cpu_profile_stack_sample"))).n
    except Exception as error:
        samples = f"unknown ({str(error).splitlines()[0][:80]})"
finally:
    tp.close()
for row in rows:
    print(f"  {row.ts / 1e6:12.3f} ms  dur {row.dur / 1e6:10.3f} ms  depth {row.depth}  tid {row.tid}  {row.name}")
print(f"  stack samples imported: {samples}")
names = [row.name for row in rows]
wanted = ["touchDown", "longPress", "busy stall", "touchUp"]
problems = []
if bad:
    problems.append(f"import problems in stats: {bad}")
if [name for name in names if name in wanted] != wanted:
    problems.append(f"slices {names}, expected {wanted} in that order")
if len({row.tid for row in rows if row.name in wanted}) != 1:
    problems.append("the events are not on one thread track")
if problems:
    print("check-perfetto: FAIL: " + "; ".join(problems))
    sys.exit(1)
print(f"check-perfetto: ok: {path}: {', '.join(wanted)} on one thread track, in order, nothing dropped")
PY
