#!/usr/bin/env bash
# Fuzzes every input parser with libFuzzer (swiftc -sanitize=fuzzer,address), SECONDS each (default 60):
# capture (CaptureReader.parse, fold, report, flame graph, exports), perf script, macOS sample, folded, speedscope JSON
# (each folded, then reported, drawn and exported), differential folded (drawn as graph and chart; and diff).
# The targets (tools/fuzz/*.swift) are built against the StallFormat and StallAnalysis sources in .build/fuzz,
# apart from the package's build; seeds come from the test fixtures and a few generated captures.
# Prints each target's executions and crashes; exits 0 only when none crashed (crashing inputs are kept in
# .build/fuzz/crashes/TARGET/ and their paths printed).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
root="$PWD"
out="$root/.build/fuzz"
flags=(-sanitize=fuzzer,address -parse-as-library -enable-testing -Onone -g)
mkdir -p "$out/lib" "$out/bin"
quiet() { grep -v -e 'ld.gold: warning: Cannot export local symbol' || true; }

echo "fuzz: building the targets in $out"
swiftc "${flags[@]}" -module-name StallFormat -emit-library -static -emit-module \
    -emit-module-path "$out/lib/StallFormat.swiftmodule" -o "$out/lib/libStallFormat.a" Sources/StallFormat/*.swift 2>&1 | quiet
# The sources SwiftPM's EmbedText plugin generates (FlameGraphScript.js -> FlameGraphScript.source), made here
# with the same generator.
mkdir -p "$out/generated"
swiftc -O tools/embed-text/main.swift -o "$out/embed-text" 2>&1 | quiet
for js in $(find Sources/StallAnalysis -name '*.js' | sort); do
    name=$(basename "$js" .js)
    "$out/embed-text" "$js" "$out/generated/$name.embedded.swift" "$name"
done
# StallAnalysis's C modules: the runtime's demangler shim (compiled here), the system's zlib (module map only), and
# the DWARF reader's shim (below).
clang -c -g -fsanitize=address -I Sources/CSwiftDemangle/include Sources/CSwiftDemangle/swiftdemangle.c \
    -o "$out/lib/swiftdemangle.o"
ar rcs "$out/lib/libCSwiftDemangle.a" "$out/lib/swiftdemangle.o"
# The DWARF reader's shim (libdw itself is loaded at run time), with the module map SwiftPM would make for it.
clang -c -g -fsanitize=address -I Sources/CStallDwarf/include Sources/CStallDwarf/stalldwarf.c \
    -o "$out/lib/stalldwarf.o"
ar rcs "$out/lib/libCStallDwarf.a" "$out/lib/stalldwarf.o"
mkdir -p "$out/CStallDwarf"
printf 'module CStallDwarf {\n    header "%s/Sources/CStallDwarf/include/stalldwarf.h"\n    export *\n}\n' "$root" \
    >"$out/CStallDwarf/module.modulemap"
cmodules=(-I Sources/CSwiftDemangle/include -I Sources/CZlib -I "$out/CStallDwarf")
swiftc "${flags[@]}" -I "$out/lib" "${cmodules[@]}" -module-name StallAnalysis -emit-library -static -emit-module \
    -emit-module-path "$out/lib/StallAnalysis.swiftmodule" -o "$out/lib/libStallAnalysis.a" \
    $(find Sources/StallAnalysis "$out/generated" -name '*.swift' | sort) 2>&1 | quiet
link() {  # NAME SOURCE [DEFINES...]
    local name="$1" source="$2"; shift 2
    swiftc "${flags[@]}" "$@" -I "$out/lib" "${cmodules[@]}" -L "$out/lib" -lStallAnalysis -lStallFormat \
        -lCSwiftDemangle -lCStallDwarf -ldl -lz \
        -module-name "fuzz_$name" "$source" -o "$out/bin/$name" 2>&1 | quiet
    [ -x "$out/bin/$name" ] || { echo "fuzz: could not build $name" >&2; exit 2; }
}
link capture tools/fuzz/capture.swift
link perf tools/fuzz/text.swift -D FUZZ_PERF
link sample tools/fuzz/text.swift -D FUZZ_SAMPLE
link folded tools/fuzz/text.swift -D FUZZ_FOLDED
link speedscope tools/fuzz/text.swift -D FUZZ_SPEEDSCOPE
link diff tools/fuzz/diff.swift
swiftc -parse-as-library -module-name FuzzSeeds Sources/StallFormat/*.swift tools/fuzz/seeds.swift \
    -o "$out/bin/seeds" 2>&1 | quiet

# Seeds: the fixtures of each format (copied, so the fuzzer's new inputs never land in Tests/).
fixtures=Tests/StallAnalysisTests/Fixtures
rm -rf "$out/seeds"
mkdir -p "$out/seeds"/{capture,perf,sample,folded,diff,speedscope}
"$out/bin/seeds" "$out/seeds/capture"
cp "$fixtures/perf-script.txt" "$out/seeds/perf/"
cp "$fixtures/sample-report.txt" "$out/seeds/sample/"
cp "$fixtures/folded-mixed.txt" "$fixtures"/flamegraph/*.folded "$out/seeds/folded/"
cp "$fixtures"/flamegraph/*.folded "$out/seeds/diff/"
cp "$fixtures"/speedscope/*.json "$out/seeds/speedscope/"
# A differential seed (two counts per line) and a diff pair (before NUL after).
printf 'main;a;b 3 5\nmain;a 1 0\nmain;c 0 2\n' > "$out/seeds/diff/two-counts.folded"
{ cat "$fixtures/flamegraph/before.folded"; printf '\0'; cat "$fixtures/flamegraph/after.folded"; } \
    > "$out/seeds/diff/pair.folded"
# Counts at the limit (FoldedCount): two counts whose sum is infinite as Doubles (308 digits; flamegraph trapped on
# them), counts of 2^64 written as an integer and as a fraction, and a stack whose lines sum past 2^64-1.
nines=$(printf '9%.0s' $(seq 308))
for target in folded diff; do
    printf 'a;b %s\na;c %s\nok 1\n' "$nines" "$nines" > "$out/seeds/$target/infinite-sum.folded"
    printf 'a %s.5\nb %s.0\n' "$nines" "$nines" > "$out/seeds/$target/infinite-fraction-sum.folded"
    printf 'a 18446744073709551616\nb 18446744073709551616.0\nc 18446744073709551615\nc 1\nd 3\n' \
        > "$out/seeds/$target/two-to-the-64.folded"
done
printf 'a %s %s\nb 18446744073709551616 1\nc 1 18446744073709551616\n' "$nines" "$nines" \
    > "$out/seeds/diff/infinite-two-counts.folded"
printf 'app 1 1.0: 18446744073709551615 cpu-clock:\n\t1 main (/app)\n\napp 1 2.0: 18446744073709551615 cpu-clock:\n\t1 main (/app)\n\n' \
    > "$out/seeds/perf/two-to-the-64.txt"
printf '{"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{"frames":[{"name":"a"}]},"profiles":[{"type":"sampled","name":"p","unit":"none","startValue":0,"endValue":1,"samples":[[0],[0]],"weights":[1e19,1e19]}]}' \
    > "$out/seeds/speedscope/two-to-the-64.json"
for extra in "$fixtures"/regressions/*/*; do  # crashing inputs fixed earlier: regression seeds
    [ -f "$extra" ] || continue
    target=$(basename "$(dirname "$extra")")
    [ -d "$out/seeds/$target" ] && cp "$extra" "$out/seeds/$target/"
done

failed=0
for target in capture perf sample folded speedscope diff; do
    corpus="$out/corpus/$target" crashes="$out/crashes/$target"
    rm -rf "$crashes"  # this run's crashes only; the corpus grows from run to run
    mkdir -p "$corpus" "$crashes"
    log="$out/$target.log"
    # A target stops at its first crash, hang (-timeout: 10 s for one input) or memory blow-up (-rss_limit_mb:
    # 2 GB), each kept as crash-*, timeout-* or oom-*. ASan's leak check is off (caches live until exit).
    ASAN_OPTIONS=detect_leaks=0 "$out/bin/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -max_len=65536 -artifact_prefix="$crashes/" -print_final_stats=1 \
        "$corpus" "$out/seeds/$target" > "$log" 2>&1 || true
    execs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
    found=$(find "$crashes" -type f | sort)
    count=$(printf '%s' "$found" | grep -c . || true)
    printf 'fuzz: %-10s %10s executions, %s crashes\n' "$target" "$execs" "$count"
    if [ "$count" -gt 0 ]; then
        failed=1
        printf '  %s\n' $found
        grep -m3 -E 'Fatal error|ERROR: (AddressSanitizer|libFuzzer)|SUMMARY' "$log" | sed 's/^/  /' || true
        echo "  log: $log"
    fi
done
exit "$failed"
