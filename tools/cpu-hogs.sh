#!/usr/bin/env bash
# Starts N CPU-bound processes (a shell loop each) that stop by themselves after SECONDS, to load the machine
# while bisect or check runs (docs/BISECT.md, "Under load"). Prints their pids, one a line, on standard output,
# and how to stop them early on standard error.
#   tools/cpu-hogs.sh N SECONDS
# Example: pids=$(tools/cpu-hogs.sh 4 60); ...; kill $pids
set -euo pipefail
if [[ $# -ne 2 || ! $1 =~ ^[0-9]+$ || ! $2 =~ ^[0-9]+$ || $1 -lt 1 || $2 -lt 1 ]]; then
    echo "usage: tools/cpu-hogs.sh N SECONDS" >&2
    exit 64
fi
pids=()
for ((i = 0; i < $1; i++)); do
    # timeout ends the loop after SECONDS; a SIGTERM to timeout is passed on to the loop.
    timeout "$2" sh -c 'while :; do :; done' </dev/null >/dev/null 2>&1 &
    pids+=("$!")
done
printf '%s\n' "${pids[@]}"
echo "cpu-hogs: ${#pids[@]} hogs for $2 s; stop them with: kill ${pids[*]}" >&2
