#!/usr/bin/env bash
# Saturation criterion under load: runs cell-height with its endless layout loop (must read saturated) and a
# healthy animation (cell-height --animate 60 without self-sizing: 60 % work every 10 ms, must read nothing),
# RUNS times each, first on a quiet machine, then with HOGS CPU hogs (shell busy loops, killed at the end).
# Prints each run's episodes (kind, duration, samples, active and CPU share) and the main thread's context
# switches (of the first thread: under LOOP=dispatch the main queue runs on a worker); asserts nothing.
#   [LOOP=dispatch] tools/saturation-under-load.sh [HOGS] [RUNS] [SECONDS]    (LOOP: cell-height --loop)
set -euo pipefail
cd "$(dirname "$0")/.."
hogs=${1:-4}
runs=${2:-3}
seconds=${3:-4}
swift build --product cell-height >/dev/null
bin=.build/debug/cell-height
scratch=$(mktemp -d)
hog_pids=()
cleanup() {
    for pid in "${hog_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$scratch"
}
trap cleanup EXIT

# Lists a capture's episodes: kind, duration, sample count, active and CPU share (from the end record).
summarize() {
    python3 - "$1" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"STALLPRF", "not a capture"
version = struct.unpack_from("<H", data, 8)[0]
pos, begins, samples, ends = 16, {}, {}, {}
while pos + 5 <= len(data):
    kind, length = struct.unpack_from("<BI", data, pos)
    payload = data[pos + 5 : pos + 5 + length]
    pos += 5 + length + 4
    if len(payload) < length:
        break
    if kind == 3:
        sid, start, detected, tid = struct.unpack_from("<IQQi", payload)
        begins[sid] = (start, detected, payload[24] if version >= 2 else 1)
    elif kind == 4:
        sid = struct.unpack_from("<I", payload)[0]
        samples[sid] = samples.get(sid, 0) + 1
    elif kind == 5:
        ends[sid := struct.unpack_from("<I", payload)[0]] = struct.unpack_from("<QQQQ", payload, 4)
if not begins:
    print("    no episode")
for sid, (start, detected, kind) in sorted(begins.items()):
    name = {1: "stall", 2: "saturated"}.get(kind, "?")
    line = f"    #{sid} {name}: detected after {(detected - start) / 1e9:.2f} s, {samples.get(sid, 0)} samples"
    if sid in ends:
        end, cpu, wait, measured = ends[sid]
        share = lambda x: f"{100 * x / measured:.0f} %" if measured else "-"
        line += f", lasted {(end - start) / 1e9:.2f} s, active {share(cpu + wait)}, cpu {share(cpu)}"
    else:
        line += ", unfinished"
    print(line)
PY
}

# Runs cell-height with the watchdog; prints its episodes and the main thread's voluntary switches.
trial() {
    local label=$1; shift
    local capture="$scratch/run.stalls"
    rm -f "$capture"
    env STALLPROF_OUTPUT="$capture" "$@" "$bin" --seconds "$seconds" ${ANIMATE:+--animate "$ANIMATE"} ${LOOP:+--loop "$LOOP"} >/dev/null &
    local pid=$!
    sleep "$((seconds - 1))"
    local switches
    switches=$(grep -h '^voluntary_ctxt_switches' "/proc/$pid/task/$pid/status" 2>/dev/null | awk '{print $2}' || true)
    wait "$pid"
    echo "  $label: main thread voluntary switches after $((seconds - 1)) s: ${switches:-?}"
    summarize "$capture"
}

phase() {
    echo "$1 (load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores)"
    for i in $(seq "$runs"); do
        trial "layout loop, run $i" env
        ANIMATE=60 trial "healthy animation 60 %, run $i" env STALLPROF_DISABLE=self-sizing
    done
}

phase "quiet machine"
for _ in $(seq "$hogs"); do
    timeout 120 sh -c 'while :; do :; done' &
    hog_pids+=($!)
done
sleep 1
phase "with $hogs CPU hogs"
