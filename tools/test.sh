#!/usr/bin/env bash
# The test command: sets up, builds every product (the tests run the sample apps and the CLI), runs the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
swift build
swift test "$@"
