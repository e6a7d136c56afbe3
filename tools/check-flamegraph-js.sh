#!/usr/bin/env bash
# Syntax check of the flame graph's JavaScript (Sources/StallAnalysis/FlameGraph/*.js), run by .ci/run.
# With node (`apt-get install -y nodejs` when missing and root): `node --check` on each file, and on the script
# exactly as a drawn SVG carries it (with the variables the SVG writer defines first) when a stallprof binary is
# built. Without node, headless chromium (as tools/flamegraph-browser-check.py installs) compiles each file with
# `new Function`. Skips with a message, exit 0, only when neither can be had. Also fails when a file holds the
# CDATA end marker, which would end the SVG's script section early. JS_CHECKER=chromium skips node (to check
# that path).
set -euo pipefail
cd "$(dirname "$0")/.."
files=(Sources/StallAnalysis/FlameGraph/*.js)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

for file in "${files[@]}"; do
    if grep -q ']]>' "$file"; then echo "FAIL: $file holds ']]>' (ends the SVG's CDATA section)"; exit 1; fi
done

node=""
[[ "${JS_CHECKER:-auto}" == chromium ]] || node=$(command -v node || command -v nodejs || true)
if [[ -z "$node" && "${JS_CHECKER:-auto}" != chromium && $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    echo "installing nodejs for the syntax check..."
    if apt-get install -y -qq nodejs >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq nodejs >/dev/null 2>&1; }; then
        node=$(command -v node || command -v nodejs || true)
    fi
fi

if [[ -n "$node" ]]; then
    for file in "${files[@]}"; do
        "$node" --check "$file"
        echo "ok: node --check $file"
    done
    stallprof=""
    for candidate in .build/debug/stallprof .build/release/stallprof; do
        [[ -x "$candidate" ]] && stallprof=$candidate && break
    done
    if [[ -n "$stallprof" ]]; then
        printf 'main;a 3\nmain;b 2\n' | "$stallprof" flamegraph --countname 'x"<y' - > "$scratch/graph.svg"
        sed -n '/<!\[CDATA\[/,/\]\]>/p' "$scratch/graph.svg" | sed '1s/.*<!\[CDATA\[//; $s/\]\]>.*//' > "$scratch/embedded.js"
        [[ -s "$scratch/embedded.js" ]] || { echo "FAIL: no script in the SVG $stallprof draws"; exit 1; }
        "$node" --check "$scratch/embedded.js"
        echo "ok: node --check on the script of an SVG drawn by $stallprof ($(wc -l < "$scratch/embedded.js") lines)"
    fi
    exit 0
fi

chromium=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [[ -n "$chromium" ]] && command -v python3 >/dev/null; then
    for file in "${files[@]}"; do
        python3 - "$file" "$scratch/check.html" <<'PY'
import json, sys
source = open(sys.argv[1], encoding="utf-8").read()
page = ("<html><head><title>pending</title></head><body><script>var src = %s;\n"
        "try { new Function(src); document.title = 'SYNTAX-OK'; } "
        "catch (e) { document.title = 'SYNTAX-ERROR ' + e.name + ': ' + e.message; }</script></body></html>")
open(sys.argv[2], "w", encoding="utf-8").write(page % json.dumps(source).replace("</", "<\\/"))
PY
        title=$(timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --dump-dom "file://$scratch/check.html" 2>/dev/null \
            | sed -n 's:.*<title>\(.*\)</title>.*:\1:p')
        if [[ "$title" != SYNTAX-OK ]]; then echo "FAIL: $file: ${title:-chromium gave no answer}"; exit 1; fi
        echo "ok: chromium compiles $file"
    done
    exit 0
fi

echo "skipped: neither node (nodejs) nor chromium is available to check ${files[*]}"
