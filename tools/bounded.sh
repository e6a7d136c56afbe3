#!/usr/bin/env bash
# Runs one CI stage with a deadline, so that a hang fails the stage with its name instead of running CI out of time:
#   tools/bounded.sh MINUTES COMMAND [ARGUMENTS...]
# The command's output passes through unchanged. When MINUTES pass first, it prints the Swift Testing tests that
# started and never finished (read from that output), the stage's live processes, then stops them (SIGTERM, SIGKILL
# 10 s later) and exits 124, as timeout(1) does. After the command ends, either way, processes it left behind are
# found, named and killed: those whose environment holds a variable every descendant inherits (STALLPROF_STAGE), and
# those holding the stage's output pipe open (`env -i` escapes the first; such a process would keep CI from ever
# reading the end of its output). Leftovers fail a stage that passed (exit 125).
set -uo pipefail
if [[ $# -lt 2 || ! $1 =~ ^[0-9]+$ || $1 -lt 1 ]]; then
    echo "usage: tools/bounded.sh MINUTES COMMAND [ARGUMENTS...]" >&2
    exit 64
fi
minutes=$1
shift
stage="$$-$RANDOM"
export STALLPROF_STAGE="$stage"
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Live processes (zombies left out) whose environment carries this stage's value or that hold its output pipe, but
# for this script and its tee.
stage_processes() {
    local dir pid
    for dir in /proc/[0-9]*; do
        pid=${dir#/proc/}
        [[ $pid == "$$" ]] && continue
        [[ $(tr '\0' ' ' 2>/dev/null <"$dir/cmdline") == "tee $log " ]] && continue
        grep -qz "^STALLPROF_STAGE=$stage\$" "$dir/environ" 2>/dev/null || holds_output "$dir" || continue
        [[ $(sed -E 's/^.*\) (.).*$/\1/' "$dir/stat" 2>/dev/null) == Z ]] && continue
        echo "$pid"
    done
}

# True when the process at /proc/PID ($1) has the stage's output pipe open.
holds_output() {
    [[ -n ${output:-} ]] || return 1
    local fd
    for fd in "$1"/fd/*; do
        [[ $(readlink "$fd" 2>/dev/null) == "$output" ]] && return 0
    done
    return 1
}

describe() {
    local pid
    for pid in "$@"; do
        printf '  %s %s\n' "$pid" "$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | cut -c1-200)"
    done
}

stop() {
    local pids
    mapfile -t pids < <(stage_processes)
    [[ ${#pids[@]} -eq 0 ]] && return 0
    kill -TERM "${pids[@]}" 2>/dev/null
    for _ in $(seq 20); do
        mapfile -t pids < <(stage_processes)
        [[ ${#pids[@]} -eq 0 ]] && return 0
        sleep 0.5
    done
    kill -KILL "${pids[@]}" 2>/dev/null
}

# Lets tee print the stage's last lines before this script's own (at most 10 s: a holder of the pipe that could not
# be found, another user's process, keeps it open).
finish_output() {
    for _ in $(seq 100); do
        kill -0 "$tee_pid" 2>/dev/null || return 0
        sleep 0.1
    done
}

# Swift Testing prints "◇ Test NAME started." (once per case of a parameterized test) and later "✔ Test NAME passed
# after ..." or "✘ Test NAME failed after ..." (once for all its cases).
unfinished() {
    python3 - "$log" <<'EOF'
import re, sys
started, ended = set(), set()
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    begun = re.search(r"◇ Test (?:case passing .* to )?(\S+\)) started\.$", line.rstrip("\n"))
    if begun:
        started.add(begun.group(1))
    done = re.search(r"[✔✘] Test (\S+\)).* (?:passed|failed) after ", line)
    if done:
        ended.add(done.group(1))
for name in sorted(started - ended):
    print("  " + name)
EOF
}

exec {out}> >(tee "$log")
tee_pid=$!
output=$(readlink "/proc/$$/fd/$out")
"$@" >&"$out" 2>&1 {out}>&- &
pid=$!
exec {out}>&-
deadline=$((SECONDS + minutes * 60))
while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
    sleep 2
done
if kill -0 "$pid" 2>/dev/null; then
    echo "bounded: '$*' still running after $minutes min; stopping it" >&2
    echo "bounded: tests started and not finished:" >&2
    unfinished >&2
    echo "bounded: its processes:" >&2
    mapfile -t pids < <(stage_processes)
    describe "${pids[@]}" >&2
    stop
    kill -KILL "$pid" 2>/dev/null  # the command itself, also when neither of the two ways above finds it
    wait "$pid" 2>/dev/null
    finish_output
    exit 124
fi
wait "$pid"
status=$?
sleep 1
mapfile -t left < <(stage_processes)
if [[ ${#left[@]} -gt 0 ]]; then
    echo "bounded: '$*' left ${#left[@]} process(es) running; stopping them:" >&2
    describe "${left[@]}" >&2
    stop
    [[ $status -eq 0 ]] && status=125
fi
finish_output
exit "$status"
