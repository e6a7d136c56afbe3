#!/usr/bin/env bash
# Checks that a stallprof linked with --static-swift-stdlib (the build to ship to a machine without the toolchain)
# names frames exactly as the normal build: it builds both, folds a capture of the demo (Swift names that need
# demangling) and every fold fixture (with --demangle) through each, and compares the outputs byte for byte.
# Exits non-zero on any difference, or when the static build's output has a mangled Swift name left.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
swift build --product stallprof >/dev/null
swift build --product stall-demo >/dev/null
swift build --product stallprof --static-swift-stdlib --scratch-path .build/static >/dev/null
dynamic="$(swift build --show-bin-path)/stallprof"
static="$(swift build --static-swift-stdlib --scratch-path .build/static --show-bin-path)/stallprof"
if ldd "$static" | grep -q libswiftCore; then
    echo "check-static: $static links libswiftCore.so: not a static build" >&2
    exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
STALLPROF_OUTPUT="$work/demo.stalls" STALLPROF_THRESHOLD_MS=100 "$(swift build --show-bin-path)/stall-demo" \
    --stall busy --stall-ms 400 >/dev/null
inputs=("$work/demo.stalls")
for fixture in Tests/StallAnalysisTests/Fixtures/*.txt Tests/StallAnalysisTests/Fixtures/speedscope/*.json; do
    [ -f "$fixture" ] && inputs+=("$fixture")
done
failed=0
for input in "${inputs[@]}"; do
    options=()
    case "$input" in *.stalls) ;; *) options=(--demangle) ;; esac
    "$dynamic" fold "${options[@]}" "$input" >"$work/dynamic.folded" 2>"$work/dynamic.err" || true
    "$static" fold "${options[@]}" "$input" >"$work/static.folded" 2>"$work/static.err" || true
    if ! cmp -s "$work/dynamic.folded" "$work/static.folded"; then
        echo "check-static: $input folds differently in the static build:" >&2
        diff "$work/dynamic.folded" "$work/static.folded" | head -5 >&2
        failed=1
    fi
done
if grep -q '\$s12StallSamples' "$work/static.folded" 2>/dev/null || ! "$static" fold "$work/demo.stalls" | grep -q "BusyWork.descend"; then
    echo "check-static: the static build left Swift names mangled" >&2
    failed=1
fi
[ "$failed" -eq 0 ] && echo "check-static: ${#inputs[@]} inputs fold the same through the static and the dynamic stallprof"
exit "$failed"
