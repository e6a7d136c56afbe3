#!/usr/bin/env bash
# The test command: sets up, builds every product (the tests run the sample apps and the CLI), runs the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
# gdb is the reference of DebuggerStackTests (stacks read from memory against gdb's backtrace): installed when
# missing and apt-get is there (as root, or with sudo); without it that suite is skipped with its reason.
# zsh and fish read the completion scripts (CompletionsAndManTests), groff renders the man page: installed the same way.
missing=()
for tool in gdb zsh fish groff; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
if [ "${#missing[@]}" -gt 0 ] && command -v apt-get >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"; } \
        >/dev/null 2>&1 || echo "test: could not install ${missing[*]}; the tests that need them say so and skip" >&2
fi
swift build
swift test "$@"
