#!/usr/bin/env python3
"""Opens `stallprof flamegraph` SVGs in headless Chromium and checks, through the DOM after the embedded script
ran, that search (?s=) highlights exactly the matching frames with the right matched percentage and that a zoom
URL (?x=&y=) draws the zoomed frame full width, its ancestors as parents and everything else hidden. Then drives
the page like a user through the DevTools protocol (--remote-debugging-pipe, pages served on 127.0.0.1): hover
shows the tooltip in the details line, a click zooms and writes ?x=&y= into the URL, Reset Zoom clears it, Ctrl-F
asks for a regular expression and writes ?s=, and the search button resets. Takes a screenshot of each view (look
at them).

Installs the Debian package `chromium` with apt-get when it is missing and we are root (or have sudo); prints SKIP
and exits 0 when no Chromium can be had. Exits 1 on a failed check.

Environment: STALLPROF (default .build/debug/stallprof), CHROMIUM (default: chromium on PATH), SCREENSHOTS (default
out/flamegraph-browser in the repository).
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chromium_devtools import DevTools, find_chromium, serve  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STALLPROF = os.environ.get("STALLPROF", os.path.join(REPO, ".build", "debug", "stallprof"))
SHOTS = os.environ.get("SCREENSHOTS", os.path.join(REPO, "out", "flamegraph-browser"))
SVG = "{http://www.w3.org/2000/svg}"
SEARCH_FILL = "rgb(230,0,230)"

LAYOUT_STALL = """\
main;RunLoop.run;CALayer.layout;Text<"a" & b>.measure 60
main;RunLoop.run;CALayer.layout;Stack.layout;Text<"a" & b>.measure 30
main;RunLoop.run;CALayer.layout;Stack.layout;Font.load 7
main;RunLoop.run;App.handleTap;Model.load 10
main;RunLoop.run;App.handleTap;Model.load;JSON.decode 5
"""
BEFORE = "main;RunLoop.run;CALayer.layout;Text.measure 10\nmain;RunLoop.run;App.handleTap 40\nmain;idle 50\n"
AFTER = "main;RunLoop.run;CALayer.layout;Text.measure 70\nmain;RunLoop.run;App.handleTap 10\nmain;idle 50\n"


class Browser:
    def __init__(self, binary, profile_dir):
        self.base = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                     "--user-data-dir=" + profile_dir, "--virtual-time-budget=3000", "--enable-logging=stderr",
                     "--v=0"]

    def dom(self, url):
        """The DOM after load, parsed, and the console errors."""
        run = subprocess.run(self.base + ["--dump-dom", url], capture_output=True, text=True, timeout=120)
        errors = [line for line in run.stderr.splitlines() if "CONSOLE" in line and "Uncaught" in line]
        text = re.sub(r"<!DOCTYPE[^>]*>", "", run.stdout)
        return ET.fromstring(text), errors

    def screenshot(self, url, path, height):
        """A PNG of the page; `height` is the SVG's own height."""
        subprocess.run(self.base + ["--screenshot=" + path, "--window-size=1200,%d" % height, url],
                       capture_output=True, timeout=120)
        return os.path.exists(path)


HEIGHT = 170  # pixels: the test graphs are 7 rows high


def interact(binary, work, checks):
    """Hover, click to zoom, Reset Zoom, Ctrl-F search and reset, as a user would, on layout.svg."""
    server, base = serve(work)
    tools = DevTools(binary, os.path.join(work, "devtools-profile"))
    try:
        tools.open(base + "layout.svg")
        frame = ("Array.prototype.find.call(document.getElementById('frames').children, function(g) {"
                 "return g.getElementsByTagName('title')[0].textContent.indexOf(%s) === 0; })")
        rect = frame + ".getElementsByTagName('rect')[0]"
        tools.mouse("mouseMoved", tools.center(rect % json.dumps("CALayer.layout (")))
        details = tools.eval("document.getElementById('details').textContent")
        checks.expect(details == "Function: CALayer.layout (97 samples, 86.61%)", "hover: details line %r" % details)

        tools.click(tools.center(rect % json.dumps("Stack.layout (")))
        state = tools.eval("[location.search, (%s).getAttribute('width')]" % (rect % json.dumps("Stack.layout (")))
        checks.expect(state == ["?x=15&y=53", "100.0000%"], "click zooms Stack.layout and sets the URL: %s" % state)

        tools.click(tools.center("document.getElementById('unzoom')"))
        state = tools.eval("[location.search, (%s).getAttribute('width'), document.querySelectorAll('#frames .hide').length]"
                           % (rect % json.dumps("Stack.layout (")))
        checks.expect(state == ["", "33.0357%", 0], "Reset Zoom restores the graph and clears the URL: %s" % state)

        tools.ctrl_f("Font|JSON")
        state = tools.eval("[location.search, document.getElementById('matched').textContent, "
                           "document.querySelectorAll('#frames rect[fill=\"rgb(230,0,230)\"]').length]")
        checks.expect(state == ["?s=Font%7CJSON", "Matched: 10.7%", 2], "Ctrl-F searches and sets the URL: %s" % state)

        tools.click(tools.center("document.getElementById('search')"))
        state = tools.eval("[location.search, document.getElementById('search').textContent, "
                           "document.querySelectorAll('#frames rect[fill=\"rgb(230,0,230)\"]').length]")
        checks.expect(state == ["", "Search", 0], "Reset Search restores the colours and clears the URL: %s" % state)

        # The "ic" toggle (flamegraph.pl's): a lower-case search matches nothing until case is ignored.
        matched = ("[location.search, document.getElementById('matched').textContent, "
                   "document.querySelectorAll('#frames rect[fill=\"rgb(230,0,230)\"]').length, "
                   "document.getElementById('ignorecase').classList.contains('show')]")
        tools.ctrl_f("font|json")
        state = tools.eval(matched)
        checks.expect(state == ["?s=font%7Cjson", "Matched: 0.0%", 0, False], "case-sensitive search: %s" % state)
        tools.click(tools.center("document.getElementById('ignorecase')"))
        state = tools.eval(matched)
        checks.expect(state == ["?s=font%7Cjson&i=1", "Matched: 10.7%", 2, True],
                      "ic click ignores case, searches again, sets ?i=1: %s" % state)
        tools.ctrl_i()
        state = tools.eval(matched)
        checks.expect(state == ["?s=font%7Cjson", "Matched: 0.0%", 0, False], "Ctrl-I toggles ic off: %s" % state)
        tools.click(tools.center("document.getElementById('search')"))
    except (RuntimeError, TimeoutError, TypeError) as error:
        checks.expect(False, "interactive session: %s" % error)
    finally:
        tools.close()
        server.shutdown()


def frames(root):
    """{(name, fg:x, y): {'rect': attrs, 'class': str, 'label': str|None}} of the #frames groups."""
    container = next(s for s in root.iter(SVG + "svg") if s.get("id") == "frames")
    result = {}
    for g in container:
        title = g.find(SVG + "title").text
        rect = g.find(SVG + "rect")
        attrs = {k.split("}")[-1] if k.startswith("{") else k: v for k, v in rect.attrib.items()}
        fgx = next(v for k, v in rect.attrib.items() if k.endswith("}x"))
        fgw = next(v for k, v in rect.attrib.items() if k.endswith("}w"))
        label = g.find(SVG + "text")
        name = re.sub(r" \([^(]*\)$", "", title)
        result[(name, fgx, rect.get("y"))] = {"x": rect.get("x"), "width": rect.get("width"), "fill": rect.get("fill"),
                                             "fgw": float(fgw), "class": g.get("class") or "",
                                             "label": None if label is None else "".join(label.itertext())}
    return result


def text(root, ident):
    return next("".join(t.itertext()) for t in root.iter(SVG + "text") if t.get("id") == ident)


class Checks:
    def __init__(self):
        self.failures = 0

    def expect(self, condition, message):
        print(("ok    " if condition else "FAIL  ") + message)
        if not condition:
            self.failures += 1


def render(work, name, content, *options):
    source = os.path.join(work, name + ".folded")
    with open(source, "w") as handle:
        handle.write(content)
    out = os.path.join(work, name + ".svg")
    subprocess.run([STALLPROF, "flamegraph", *options, source, "-o", out], check=True)
    return out


def main():
    binary = find_chromium("browser-check")
    if not binary:
        print("browser-check: SKIP: no Chromium and it cannot be installed here (set CHROMIUM to a binary)")
        return 0
    if not os.path.exists(STALLPROF):
        print("browser-check: no %s; run swift build first" % STALLPROF)
        return 1
    os.makedirs(SHOTS, exist_ok=True)
    checks = Checks()
    with tempfile.TemporaryDirectory() as work:
        browser = Browser(binary, os.path.join(work, "profile"))
        plain = render(work, "layout", LAYOUT_STALL, "--title", "Main-thread stall <layout & text>")
        url = "file://" + plain
        page, errors = browser.dom(url)
        drawn = frames(page)
        checks.expect(not errors, "plain view: no script errors %s" % errors[:1])
        checks.expect(len(drawn) == 11 and all(not f["class"] for f in drawn.values()),
                      "plain view: 11 frames, none hidden (%d)" % len(drawn))
        checks.expect(text(page, "title") == "Main-thread stall <layout & text>", "plain view: escaped title")
        browser.screenshot(url, os.path.join(SHOTS, "1-plain.png"), HEIGHT)

        # Search by URL: exactly the frames whose name matches, matched = union of the outermost matches.
        page, errors = browser.dom(url + "?s=" + "Stack%7CModel%7CJSON")
        drawn = frames(page)
        hit = sorted(k[0] for k, f in drawn.items() if f["fill"] == SEARCH_FILL)
        want = sorted(k[0] for k in drawn if re.search("Stack|Model|JSON", k[0]))
        checks.expect(not errors and hit == want == ["JSON.decode", "Model.load", "Stack.layout"],
                      "search ?s=Stack|Model|JSON highlights %s" % hit)
        checks.expect(text(page, "matched") == "Matched: 46.4%", "search: %r (37 + 15 of 112; JSON.decode inside "
                      "Model.load counted once)" % text(page, "matched"))
        checks.expect(text(page, "search") == "Reset Search", "search: button turns into Reset Search")
        browser.screenshot(url + "?s=Stack%7CModel%7CJSON", os.path.join(SHOTS, "2-search.png"), HEIGHT)

        # Ignoring case by URL (?i=1): the lower-case search finds the same frames; without it, none.
        page, errors = browser.dom(url + "?s=stack%7Cmodel%7Cjson&i=1")
        drawn = frames(page)
        hit = sorted(k[0] for k, f in drawn.items() if f["fill"] == SEARCH_FILL)
        ic = next(t for t in page.iter(SVG + "text") if t.get("id") == "ignorecase")
        checks.expect(not errors and hit == want and text(page, "matched") == "Matched: 46.4%"
                      and "show" in (ic.get("class") or ""), "search ?s=stack|model|json&i=1 ignores case: %s %r"
                      % (hit, text(page, "matched")))
        page, errors = browser.dom(url + "?s=stack%7Cmodel%7Cjson")
        hit = [k[0] for k, f in frames(page).items() if f["fill"] == SEARCH_FILL]
        checks.expect(not errors and hit == [] and text(page, "matched") == "Matched: 0.0%",
                      "search ?s=stack|model|json without i=1 is case-sensitive: %s" % hit)

        # Zoom by URL: Stack.layout full width, ancestors parents, siblings and other subtrees hidden.
        key = next(k for k in drawn if k[0] == "Stack.layout")
        zoom_url = "%s?x=%s&y=%s" % (url, key[1], key[2])
        page, errors = browser.dom(zoom_url)
        drawn = frames(page)
        zoomed = drawn[key]
        checks.expect(not errors and zoomed["x"] == "0.0000%" and zoomed["width"] == "100.0000%",
                      "zoom ?x=%s&y=%s: Stack.layout at x %s, width %s" % (key[1], key[2], zoomed["x"], zoomed["width"]))
        parents = sorted(k[0] for k, f in drawn.items() if "parent" in f["class"])
        hidden = sorted(k[0] for k, f in drawn.items() if "hide" in f["class"])
        checks.expect(parents == ["CALayer.layout", "RunLoop.run", "all", "main"], "zoom: parents %s" % parents)
        checks.expect(hidden == ["App.handleTap", "JSON.decode", "Model.load", 'Text<"a" & b>.measure'],
                      "zoom: hidden %s" % hidden)
        child = next(f for k, f in drawn.items() if k[0] == "Font.load")
        checks.expect(abs(float(child["width"].rstrip("%")) - 100 * 7 / 37) < 0.01 and child["label"] == "Font.load",
                      "zoom: child Font.load rescaled to %s of the zoomed frame, labelled" % child["width"])
        checks.expect(text(page, "unzoom") == "Reset Zoom" and "hide" not in (
            next(t for t in page.iter(SVG + "text") if t.get("id") == "unzoom").get("class") or ""),
            "zoom: Reset Zoom shown")
        browser.screenshot(zoom_url, os.path.join(SHOTS, "3-zoom.png"), HEIGHT)

        # Zoom and search together: the matched percentage is relative to the zoomed frame.
        page, _ = browser.dom(zoom_url + "&s=Font")
        checks.expect(text(page, "matched") == "Matched: 18.9%", "zoom+search: %r of the zoomed frame" %
                      text(page, "matched"))

        # Icicle graph: zoom works upside down.
        icicle = render(work, "icicle", LAYOUT_STALL, "--inverted", "--title", "Icicle")
        drawn = frames(browser.dom("file://" + icicle)[0])
        key = next(k for k in drawn if k[0] == "Model.load")
        page, errors = browser.dom("file://%s?x=%s&y=%s" % (icicle, key[1], key[2]))
        drawn = frames(page)
        checks.expect(not errors and drawn[key]["width"] == "100.0000%" and
                      sorted(k[0] for k, f in drawn.items() if "parent" in f["class"]) ==
                      ["App.handleTap", "RunLoop.run", "all", "main"], "icicle zoom: Model.load full width")
        browser.screenshot("file://%s?x=%s&y=%s" % (icicle, key[1], key[2]), os.path.join(SHOTS, "4-icicle.png"), HEIGHT)

        interact(binary, work, checks)

        # Source lines (--lines) on a capture of stall-demo: frames stay whole, each title says where most of its
        # samples were, and a search for a file:line highlights the frames there.
        demo = os.path.join(os.path.dirname(STALLPROF), "stall-demo")
        if os.path.exists(demo):
            capture = os.path.join(work, "busy.stalls")
            subprocess.run([demo, "--stall", "busy", "--stall-ms", "400", "--output", capture], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            whole = os.path.join(work, "whole.svg")
            subprocess.run([STALLPROF, "flamegraph", capture, "-o", whole], check=True)
            lined = os.path.join(work, "lines.svg")
            subprocess.run([STALLPROF, "flamegraph", "--lines", capture, "-o", lined], check=True,
                           stderr=subprocess.DEVNULL)
            plain_frames = frames(ET.parse(whole).getroot())
            page, errors = browser.dom("file://%s?s=%s" % (lined, "Workloads%5C.swift:71"))
            drawn = frames(page)
            hit = sorted(k[0] for k, f in drawn.items() if f["fill"] == SEARCH_FILL)
            checks.expect(not errors and len(drawn) == len(plain_frames) and
                          sorted(re.sub(r" at [^ ]+:[0-9]+$", "", k[0]) for k in drawn) == sorted(k[0] for k in plain_frames),
                          "lines: the same %d frames as without --lines (%d)" % (len(plain_frames), len(drawn)))
            checks.expect(hit and all(name.endswith(" at Workloads.swift:71") for name in hit) and
                          any("BusyWork.burn" in name for name in hit),
                          "lines: search Workloads.swift:71 highlights %s" % hit)
            checks.expect(text(page, "matched").startswith("Matched: ") and text(page, "matched") != "Matched: 0.0%",
                          "lines: search %r" % text(page, "matched"))
            browser.screenshot("file://%s?s=%s" % (lined, "Workloads%5C.swift:71"), os.path.join(SHOTS, "6-lines.png"),
                               HEIGHT)
        else:
            checks.expect(False, "lines: no %s; build the samples first" % demo)

        # Differential graph from stallprof diff: red grew, blue shrank.
        before, after = os.path.join(work, "before.folded"), os.path.join(work, "after.folded")
        for path, content in ((before, BEFORE), (after, AFTER)):
            with open(path, "w") as handle:
                handle.write(content)
        diff = subprocess.run([STALLPROF, "diff", before, after], capture_output=True, text=True, check=True).stdout
        differential = render(work, "diff", diff, "--title", "Differential: after the fix")
        page, errors = browser.dom("file://" + differential)
        drawn = frames(page)
        fill = {k[0]: f["fill"] for k, f in drawn.items()}
        checks.expect(not errors and fill["Text.measure"].startswith("rgb(255,") and
                      fill["App.handleTap"].endswith(",255)"), "differential: grew red %s, shrank blue %s" %
                      (fill["Text.measure"], fill["App.handleTap"]))
        browser.screenshot("file://" + differential, os.path.join(SHOTS, "5-differential.png"), HEIGHT)

    shots = sorted(os.listdir(SHOTS))
    checks.expect(len([s for s in shots if s.endswith(".png")]) >= 6, "screenshots in %s: %s" % (SHOTS, shots))
    print("browser-check: %s (%d failed)" % ("FAILED" if checks.failures else "passed", checks.failures))
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
