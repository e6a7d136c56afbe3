#!/usr/bin/env bash
# Benchmark of `stallprof flamegraph` (release build) against flamegraph.pl, in one run, on two inputs:
# - real: a perf recording of a C++ compile (g++ -O2 of a template/STL-heavy file written below; perf record -F 999
#   --call-graph dwarf), folded by `stallprof fold`: ~5k unique stacks, ~30k frames drawn. Made reproducibly here,
#   never committed, and cached in ${TMPDIR:-/tmp}/stallprof-flamegraph-bench-real (delete it to re-record).
# - synthetic: N unique generated stacks (default 100,000, fixed seed).
# For each it prints best-of-RUNS wall times of the two, run in turn (A B A B ...: the shared machine drifts), and
# the ratio of the bests, plus stallprof's peak memory, SVG size and frames drawn. When Chromium is installed, also
# times loading the synthetic SVG and running a search in it.
# Usage: tools/flamegraph-bench.sh [N]
# Environment: FLAMEGRAPH_DIR (default ../shared/peers/FlameGraph when present), RUNS (real input, default 7),
#   SYNTHETIC_RUNS (default 3), KEEP=1 to keep the files in out/flamegraph-bench.
# perf record needs perf_event access: as root it works; otherwise, when it fails, run as root
# `sysctl kernel.perf_event_paranoid=-1` (this script does so itself when it runs as root and recording fails).
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-100000}
runs=${RUNS:-7}
synthetic_runs=${SYNTHETIC_RUNS:-3}
if [ -z "${FLAMEGRAPH_DIR:-}" ] && [ -f ../shared/peers/FlameGraph/flamegraph.pl ]; then
    FLAMEGRAPH_DIR=$(realpath ../shared/peers/FlameGraph)
fi
swift build -c release --product stallprof >/dev/null
bin=$(swift build -c release --show-bin-path)/stallprof
work=$(mktemp -d)
[ "${KEEP:-0}" = 1 ] && work=out/flamegraph-bench && mkdir -p "$work"
trap '[ "${KEEP:-0}" = 1 ] || rm -rf "$work"' EXIT

# The real input: perf record of a C++ compile, folded.
cache=${TMPDIR:-/tmp}/stallprof-flamegraph-bench-real
if [ ! -s "$cache/real.folded" ]; then
    command -v perf >/dev/null || { echo "perf is not installed (apt-get install -y linux-perf)" >&2; exit 1; }
    cxx=$(command -v g++ || command -v clang++ || true)
    [ -n "$cxx" ] || { echo "no C++ compiler (apt-get install -y g++)" >&2; exit 1; }
    mkdir -p "$cache"
    cat >"$cache/compile.cpp" <<'CPP'
#include <algorithm>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>
template <int N> struct Fib { static constexpr long v = Fib<N - 1>::v + Fib<N - 2>::v; };
template <> struct Fib<1> { static constexpr long v = 1; };
template <> struct Fib<0> { static constexpr long v = 0; };
template <typename T, int N> T work(const std::vector<T>& in) {
    std::map<T, std::vector<std::string>> m;
    std::unordered_map<std::string, T> u;
    for (auto& x : in) { m[x].push_back(std::to_string(N)); u[std::to_string(x)] = x; }
    std::vector<std::pair<T, std::string>> out;
    for (auto& [k, v] : m) for (auto& s : v) out.emplace_back(k, s);
    std::sort(out.begin(), out.end());
    std::regex r("[0-9]+");
    std::ostringstream os;
    for (auto& p : out) if (std::regex_match(p.second, r)) os << p.first;
    std::function<T(T)> f = [&](T t) { return t + (T)os.str().size() + (T)Fib<N % 40 + 5>::v; };
    return f((T)u.size());
}
#define I(n) template long work<long, n>(const std::vector<long>&); \
    template double work<double, n>(const std::vector<double>&); template int work<int, n>(const std::vector<int>&);
I(1) I(2) I(3) I(4) I(5) I(6) I(7) I(8) I(9) I(10) I(11) I(12)
CPP
    record() {
        perf record -q -F 999 --call-graph dwarf,16384 -o "$cache/perf.data" -- \
            "$cxx" -O2 -c "$cache/compile.cpp" -o "$cache/compile.o" >"$cache/record.log" 2>&1
    }
    if ! record; then
        if [ "$(id -u)" = 0 ]; then
            echo "perf record failed; setting kernel.perf_event_paranoid=-1 and retrying" >&2
            sysctl -q kernel.perf_event_paranoid=-1
            record || { cat "$cache/record.log" >&2; exit 1; }
        else
            cat "$cache/record.log" >&2
            echo "perf record is not permitted: run as root or sysctl kernel.perf_event_paranoid=-1" >&2
            exit 1
        fi
    fi
    echo "recorded $cxx -O2 (perf record --call-graph dwarf); folding (perf script takes a few minutes)" >&2
    perf script -i "$cache/perf.data" 2>/dev/null | "$bin" fold - >"$cache/real.folded.tmp"
    mv "$cache/real.folded.tmp" "$cache/real.folded"
    rm -f "$cache/perf.data" "$cache/compile.o"
fi
cp "$cache/real.folded" "$work/real.folded"

python3 - "$count" >"$work/synthetic.folded" <<'PY'
import random, sys
rng = random.Random(5)
n = int(sys.argv[1])
modules = ["UIKit", "SwiftUI", "Foundation", "CoreText", "App", "Combine", "libdispatch", "CoreFoundation"]
names = ["%s.%s%s.%s(_:)" % (rng.choice(modules), rng.choice(["Text", "Layout", "View", "Stack", "Graph", "Cache"]),
         i, rng.choice(["measure", "layout", "update", "render", "resolve", "draw"])) for i in range(3000)]
seen = set()
spine = ["main", "UIApplicationMain", "CFRunLoopRunSpecific", "__CFRunLoopRun"]
while len(seen) < n:
    depth = rng.randint(4, 45)
    stack = spine + [names[min(int(rng.paretovariate(1.2)) * (d + 1) % len(names), len(names) - 1)]
                     for d in range(depth)]
    stack = ";".join(stack)
    if stack in seen:
        continue
    seen.add(stack)
    print("%s %d" % (stack, rng.randint(1, 50)))
PY

perl_script=""
if [ -n "${FLAMEGRAPH_DIR:-}" ] && [ -f "$FLAMEGRAPH_DIR/flamegraph.pl" ]; then
    perl_script=$FLAMEGRAPH_DIR/flamegraph.pl
    echo "flamegraph.pl: $perl_script"
else
    echo "flamegraph.pl: not run (set FLAMEGRAPH_DIR to a FlameGraph checkout to compare)"
fi

# Interleaved best-of-N: stallprof, flamegraph.pl, stallprof, ... on each input, each writing its SVG to a file.
python3 - "$bin" "$perl_script" "$work" "real:$runs" "synthetic:$synthetic_runs" <<'PY'
import os, resource, subprocess, sys, time
sys.path.insert(0, "tools")
import flamegraph_svg
bin, perl, work = sys.argv[1], sys.argv[2], sys.argv[3]

def timed(command, out):
    with open(out, "wb") as sink:
        start = time.perf_counter()
        subprocess.run(command, stdout=sink, check=True)
        return time.perf_counter() - start

for spec in sys.argv[4:]:
    name, runs = spec.split(":")
    folded = os.path.join(work, name + ".folded")
    ours_svg, theirs_svg = os.path.join(work, name + ".svg"), os.path.join(work, name + "-pl.svg")
    ours, theirs = [], []
    for _ in range(int(runs)):
        ours.append(timed([bin, "flamegraph", folded], ours_svg))
        if perl:
            theirs.append(timed(["perl", perl, folded], theirs_svg))
    peak = subprocess.run(["/usr/bin/time", "-f", "%M", bin, "flamegraph", folded, "-o", "/dev/null"],
                          stderr=subprocess.PIPE, text=True, check=True).stderr.split()[-1]
    frames = flamegraph_svg.read(ours_svg)["frames"]
    with open(folded, "rb") as f:
        stacks = sum(1 for _ in f)
    print("%s: %d unique stacks, %.1f MB folded; %d frames drawn (depth %d), SVG %.1f MB, peak RSS %d MB" % (
        name, stacks, os.path.getsize(folded) / 1e6, len(frames), max(f[3] for f in frames),
        os.path.getsize(ours_svg) / 1e6, int(peak) // 1024))
    line = "  stallprof flamegraph: best %.3f s, median %.3f s of %d" % (
        min(ours), sorted(ours)[len(ours) // 2], len(ours))
    if theirs:
        line += "; flamegraph.pl: best %.3f s, median %.3f s; speed-up %.1fx (best), %.1fx (median)" % (
            min(theirs), sorted(theirs)[len(theirs) // 2], min(theirs) / min(ours),
            sorted(theirs)[len(theirs) // 2] / sorted(ours)[len(ours) // 2])
    print(line)
PY

# How heavy the SVG is for a browser: headless Chromium loads it and runs a search (?s=), start to end.
chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$chromium" ]; then
    start=$(date +%s.%N)
    timeout 300 "$chromium" --headless --no-sandbox --disable-gpu --user-data-dir="$work/chromium" \
        --virtual-time-budget=1000 --dump-dom "file://$(realpath "$work/synthetic.svg")?s=layout" \
        2>/dev/null >"$work/dom.html" || true
    end=$(date +%s.%N)
    matched=$(grep -o 'Matched: [0-9.]*%' "$work/dom.html" || echo "no search result")
    python3 -c "print('chromium: load + search of the synthetic SVG in %.2f s (%s)' % ($end - $start, '$matched'))"
fi
