#!/usr/bin/env bash
# Installs the stallprof CLI: `tools/install.sh [PREFIX]` (default /usr/local) builds it alone, in release mode,
# linked statically against the Swift runtime (it runs on a machine without the toolchain, and demangles Swift
# names exactly as the normal build: tools/check-static.sh), and copies it to PREFIX/bin/stallprof.
# The build goes to .build/install, apart from the normal build. Exits non-zero when the build or the copy fails.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="${1:-/usr/local}"
case "$prefix" in
    -h|--help) echo "usage: tools/install.sh [PREFIX]   (default /usr/local; installs PREFIX/bin/stallprof)"; exit 0 ;;
    -*) echo "usage: tools/install.sh [PREFIX]" >&2; exit 64 ;;
esac
tools/setup.sh
scratch=.build/install
swift build -c release --product stallprof --static-swift-stdlib --scratch-path "$scratch"
binary="$(swift build -c release --static-swift-stdlib --scratch-path "$scratch" --show-bin-path)/stallprof"
mkdir -p "$prefix/bin"
install -m 755 "$binary" "$prefix/bin/stallprof"
echo "installed $prefix/bin/stallprof ($("$prefix/bin/stallprof" --version))"
