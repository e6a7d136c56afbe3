#!/usr/bin/env bash
# Checks what stallprof needs to build on Debian: the Swift 6.3 toolchain on PATH (nothing else: the capture
# handler's unwinder is stallprof's own, no system library). Safe to run again; changes nothing.
set -euo pipefail
command -v swift >/dev/null 2>&1 || { echo "setup: no 'swift' on PATH; install the Swift 6.3 toolchain" >&2; exit 1; }
