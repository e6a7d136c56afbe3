#!/usr/bin/env bash
# Checks tools/install.sh as a user runs it: installs into a temporary prefix, then runs the installed stallprof with
# an environment that has no Swift toolchain in it (PATH of the system only, no LD_LIBRARY_PATH): it must start,
# link no Swift library, and fold a capture of the demo with Swift names demangled. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tools/install.sh "$work/prefix" >/dev/null
installed="$work/prefix/bin/stallprof"
if ldd "$installed" | grep -q 'libswift\|libFoundation\|libdispatch'; then
    echo "check-install: $installed links a library of the Swift toolchain:" >&2
    ldd "$installed" >&2
    exit 1
fi
swift build --product stall-demo >/dev/null
STALLPROF_OUTPUT="$work/demo.stalls" STALLPROF_THRESHOLD_MS=100 "$(swift build --show-bin-path)/stall-demo" \
    --stall busy --stall-ms 300 >/dev/null
folded=$(env -i PATH=/usr/bin:/bin HOME="$work" "$installed" fold "$work/demo.stalls")
if ! grep -q "BusyWork.descend" <<<"$folded"; then
    echo "check-install: the installed stallprof did not name the demo's frames:" >&2
    head -c 400 <<<"$folded" >&2
    exit 1
fi
for file in share/man/man1/stallprof.1 share/bash-completion/completions/stallprof share/zsh/site-functions/_stallprof \
    share/fish/vendor_completions.d/stallprof.fish; do
    [ -s "$work/prefix/$file" ] || { echo "check-install: $file was not installed" >&2; exit 1; }
done
bash -n "$work/prefix/share/bash-completion/completions/stallprof"
env -i PATH=/usr/bin:/bin "$installed" --version
echo "check-install: $installed runs without the toolchain and demangles"
