#!/usr/bin/env bash
# Prints the number of runs `stallprof bisect` needs on simulated repros: n = 8, 16, 32, 64 flags with one
# culprit, an AND pair and an OR pair (deterministic), and the success rate and runs of a 70 % / 50 % flaky
# AND pair with 12 flags. Usage: tools/bench-bisect.sh [--seeds N]
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product stallprof-bench-bisect >&2
exec .build/release/stallprof-bench-bisect "$@"
