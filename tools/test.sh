#!/usr/bin/env bash
# The test command: sets up, builds every product (the tests run the sample apps and the CLI), runs the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
# gdb is the reference of DebuggerStackTests (stacks read from memory against gdb's backtrace): installed when
# missing and apt-get is there (as root, or with sudo); without it that suite is skipped with its reason.
if ! command -v gdb >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq gdb; } >/dev/null 2>&1 \
        || echo "test: could not install gdb; DebuggerStackTests will be skipped" >&2
fi
swift build
swift test "$@"
