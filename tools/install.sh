#!/usr/bin/env bash
# Installs the stallprof CLI: `tools/install.sh [PREFIX]` (default /usr/local) builds it alone, in release mode,
# linked statically against the Swift runtime (it runs on a machine without the toolchain, and demangles Swift
# names exactly as the normal build: tools/check-static.sh), and copies it to PREFIX/bin/stallprof, with its man
# page (PREFIX/share/man/man1/stallprof.1) and its bash, zsh and fish completions (PREFIX/share/bash-completion/
# completions/stallprof, PREFIX/share/zsh/site-functions/_stallprof, PREFIX/share/fish/vendor_completions.d/
# stallprof.fish), which the installed binary generates from its own option tables.
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
mkdir -p "$prefix/bin" "$prefix/share/man/man1" "$prefix/share/bash-completion/completions" \
    "$prefix/share/zsh/site-functions" "$prefix/share/fish/vendor_completions.d"
install -m 755 "$binary" "$prefix/bin/stallprof"
"$prefix/bin/stallprof" man >"$prefix/share/man/man1/stallprof.1"
"$prefix/bin/stallprof" completions bash >"$prefix/share/bash-completion/completions/stallprof"
"$prefix/bin/stallprof" completions zsh >"$prefix/share/zsh/site-functions/_stallprof"
"$prefix/bin/stallprof" completions fish >"$prefix/share/fish/vendor_completions.d/stallprof.fish"
echo "installed $prefix/bin/stallprof ($("$prefix/bin/stallprof" --version))"
