#!/usr/bin/env bash
# Runs the test suite under a sanitizer: `tools/sanitize.sh thread|address [swift test options]`.
# Builds every product (the tests run the sample apps and the CLI as subprocesses from the same products
# directory, so they are instrumented too) in its own scratch path, .build/sanitize-KIND, apart from the normal build.
# Exits non-zero when a test fails or the sanitizer reports anything (a report makes the process exit non-zero).
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-}"
case "$kind" in
    thread|address) shift ;;
    *) echo "usage: tools/sanitize.sh thread|address [swift test options]" >&2; exit 64 ;;
esac
scratch=".build/sanitize-$kind"
tools/setup.sh
# halt_on_error: the first report fails the run. Two settings, not suppressions of reports:
# - detect_leaks=0: LeakSanitizer's reports on this suite come from the toolchain's libraries (seen: XCTest's
#   XCTMainMisc/XCTestSuiteRun objects, the weak reference Foundation.Process.run forms), not from this project.
# - use_sigaltstack=0: ASan would give every thread an alternate signal stack of its own, and
#   HostSurvivalTests checks that a fresh thread has none until stallprof installs its 64 KiB one.
export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=0:use_sigaltstack=0}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1}"
swift build --sanitize="$kind" --scratch-path "$scratch"
swift test --sanitize="$kind" --scratch-path "$scratch" "$@"
