#!/usr/bin/env python3
"""Opens `stallprof flamegraph` SVGs in headless Chromium and checks, through the DOM after the embedded script
ran, that search (?s=) highlights exactly the matching frames with the right matched percentage and that a zoom
URL (?x=&y=) draws the zoomed frame full width, its ancestors as parents and everything else hidden. Takes a
screenshot of each view (look at them).

Installs the Debian package `chromium` with apt-get when it is missing and we are root (or have sudo); prints SKIP
and exits 0 when no Chromium can be had. Exits 1 on a failed check.

Environment: STALLPROF (default .build/debug/stallprof), CHROMIUM (default: chromium on PATH), SCREENSHOTS (default
out/flamegraph-browser in the repository).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

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


def find_chromium():
    for name in filter(None, [os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"]):
        path = shutil.which(name)
        if path:
            return path
    if shutil.which("apt-get"):
        sudo = [] if os.geteuid() == 0 else (["sudo", "-n"] if shutil.which("sudo") else None)
        if sudo is not None:
            print("browser-check: installing chromium with apt-get", file=sys.stderr)
            env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
            subprocess.run(sudo + ["apt-get", "update", "-qq"], env=env, capture_output=True)
            subprocess.run(sudo + ["apt-get", "install", "-y", "-qq", "chromium"], env=env, capture_output=True)
            return shutil.which("chromium")
    return None


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
    binary = find_chromium()
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
    checks.expect(len([s for s in shots if s.endswith(".png")]) >= 5, "screenshots in %s: %s" % (SHOTS, shots))
    print("browser-check: %s (%d failed)" % ("FAILED" if checks.failures else "passed", checks.failures))
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
