#!/usr/bin/env bash
# Validates `stallprof export` with real readers: speedscope's JSON schema (Python jsonschema from PyPI, in a venv
# under .build), `protoc --decode perftools.profiles.Profile` and `go tool pprof -top` (Debian protobuf-compiler
# and golang-go, installed when missing and we are root or have sudo), and a trace-event structure check for
# chrome-trace (tools/export_validate.py). Inputs: captures of the samples (a busy, a blocked and a saturated
# main thread), the text fixtures (folded, perf script, macOS sample), the speedscope fixtures and, when
# ../shared/conformance is there, speedscope's own example files. Also checks the round trips: export speedscope
# then fold gives the input's folded stacks (captures: with --weight samples).
# Usage: tools/check-export.sh   (STALLPROF_BIN=.build/debug by default). Exits 1 on the first failure; skips
# (exit 0) when ../shared/formats is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
bin="${STALLPROF_BIN:-.build/debug}"
out="$root/.build/check-export"
formats="$root/../shared/formats"
if [ ! -f "$formats/profile.proto" ]; then
    echo "check-export: $formats/profile.proto not found (../shared beside the repository); skipped"
    exit 0
fi
rm -rf "$out"
mkdir -p "$out"

missing=()
command -v protoc >/dev/null 2>&1 || missing+=(protobuf-compiler)
command -v go >/dev/null 2>&1 || missing+=(golang-go)
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "check-export: installing ${missing[*]}"
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"; } >/dev/null \
        || echo "check-export: could not install ${missing[*]}" >&2
fi
command -v protoc >/dev/null 2>&1 || { echo "check-export: protoc is required" >&2; exit 1; }
venv="$root/.build/export-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import jsonschema' 2>/dev/null; then
    rm -rf "$venv"
    { python3 -m venv "$venv" && "$venv/bin/pip" install -q jsonschema; } >/dev/null 2>&1 \
        || echo "check-export: could not make a venv with jsonschema in $venv" >&2
fi
py="$venv/bin/python"
if ! "$py" -c 'import jsonschema' 2>/dev/null; then
    py=python3  # the system's, when it has jsonschema
    "$py" -c 'import jsonschema' 2>/dev/null || { echo "check-export: Python jsonschema is required" >&2; exit 1; }
fi
validate() { FORMATS="$formats" "$py" tools/export_validate.py "$@"; }

swift build --product stallprof 2>&1 | tail -1
swift build --product stall-demo 2>&1 | tail -1
swift build --product cell-height 2>&1 | tail -1
stallprof="$bin/stallprof"

# Captures: a busy stall, a blocked one, a saturated main thread.
STALLPROF_OUTPUT="$out/busy.stalls" "$bin/stall-demo" --stall busy >/dev/null
STALLPROF_OUTPUT="$out/blocked.stalls" "$bin/stall-demo" --stall blocked >/dev/null
STALLPROF_OUTPUT="$out/saturated.stalls" "$bin/cell-height" --seconds 2 >/dev/null

samples() { awk '{ s += $NF } END { printf "%d", s }' "$1"; }
for capture in "$out"/*.stalls; do
    name=$(basename "$capture" .stalls)
    "$stallprof" fold "$capture" -o "$out/$name.folded"
    "$stallprof" export --format speedscope "$capture" -o "$out/$name.speedscope.json"
    "$stallprof" export --format chrome-trace "$capture" -o "$out/$name.trace.json"
    "$stallprof" export --format pprof "$capture" -o "$out/$name.pb.gz"
    validate speedscope "$out/$name.speedscope.json"
    validate chrome-trace "$out/$name.trace.json"
    CAPTURE=1 validate pprof "$out/$name.pb.gz" "$(samples "$out/$name.folded")"
    "$stallprof" export --format speedscope --weight samples "$capture" -o "$out/$name.samples.json"
    "$stallprof" fold "$out/$name.samples.json" -o "$out/$name.roundtrip.folded"
    cmp -s "$out/$name.folded" "$out/$name.roundtrip.folded" \
        || { echo "FAIL round trip: fold of the speedscope export differs from fold of $capture"; exit 1; }
    echo "ok   round trip $name: export --weight samples | fold == fold"
done

fixtures=(Tests/StallAnalysisTests/Fixtures/folded-mixed.txt Tests/StallAnalysisTests/Fixtures/perf-script.txt
          Tests/StallAnalysisTests/Fixtures/sample-report.txt Tests/StallAnalysisTests/Fixtures/speedscope/pyspy-sampled.json
          Tests/StallAnalysisTests/Fixtures/speedscope/pyinstrument-evented.json)
examples="$root/../shared/conformance/jlfwong-speedscope/speedscope-json-examples/input"
[ -d "$examples" ] && fixtures+=("$examples"/0.*.json)
for input in "${fixtures[@]}"; do
    name=$(basename "$input")
    "$stallprof" fold "$input" -o "$out/$name.folded" 2>/dev/null
    "$stallprof" export --format speedscope "$input" -o "$out/$name.speedscope.json" 2>/dev/null
    "$stallprof" export --format chrome-trace "$input" -o "$out/$name.trace.json" 2>/dev/null
    "$stallprof" export --format pprof "$input" -o "$out/$name.pb.gz" 2>/dev/null
    validate speedscope "$out/$name.speedscope.json"
    validate chrome-trace "$out/$name.trace.json"
    # pprof counts are whole samples: fractional folded counts round (half away from zero), as the exporter does.
    expected=$(awk '{ s += int($NF + 0.5) } END { printf "%d", s }' "$out/$name.folded")
    raw=$(awk '{ s += $NF } END { printf "%.6f", s }' "$out/$name.folded")
    validate pprof "$out/$name.pb.gz" "$expected" "$raw"
    if [ "$name" = perf-script.txt ]; then
        # perf text is exported timed (each sample weighs its time in milliseconds); with --weight samples each
        # weighs its count, the period in the event's unit, as fold counts it.
        "$stallprof" export --format speedscope --weight samples "$input" -o "$out/$name.speedscope.json" 2>/dev/null
        validate speedscope "$out/$name.speedscope.json"
    fi
    "$stallprof" fold "$out/$name.speedscope.json" -o "$out/$name.roundtrip.folded"
    cmp -s "$out/$name.folded" "$out/$name.roundtrip.folded" \
        || { echo "FAIL round trip: fold of the speedscope export of $input differs from fold of it"; exit 1; }
    echo "ok   round trip $name: export | fold == fold"
done
# The long-press story (README): touch-down, the long-press callback, the busy stall inside it and touch-up, on
# the main thread's track in that order; marker instants thread-scoped.
swift build --product long-press 2>&1 | tail -1
rm -f "$out/press.stalls"
STALLPROF_OUTPUT="$out/press.stalls" "$bin/long-press" >/dev/null
"$stallprof" export --format chrome-trace "$out/press.stalls" -o "$out/press.trace.json"
# The callback and its stall begin together (the watchdog pings as the main thread wakes): either may come first.
validate chrome-trace "$out/press.trace.json" "touchDown,longPress|busy stall,touchUp"
# An empty stack (folded ` N`) is kept by every export, and read back as nothing.
printf 'main;work 3\n 2\n' > "$out/empty-stack.folded"
"$stallprof" export --format speedscope "$out/empty-stack.folded" -o "$out/empty-stack.speedscope.json"
validate speedscope "$out/empty-stack.speedscope.json"
"$stallprof" export --format chrome-trace "$out/empty-stack.folded" -o "$out/empty-stack.trace.json"
validate chrome-trace "$out/empty-stack.trace.json"
echo "check-export: all outputs valid (files in $out)"
