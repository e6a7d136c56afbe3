"""Structural reading of flame graph SVGs (stallprof's and inferno's): frames as (name, x, width, depth).

Shared by tools/flamegraph-conformance.py and tools/flamegraph-bench.sh. Standard library only.
"""
import re
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
TITLE_TAIL = re.compile(r" \([^(]*\)$")


def _fg(element, local):
    """The fg:-namespaced attribute `local` (fg:x, fg:w), not the plain one."""
    for key, value in element.attrib.items():
        if key.startswith("{") and key.endswith("}" + local):
            return value
    raise KeyError(local)


def read(path):
    """Returns {'title', 'subtitle', 'total', 'frames': [(name, x, w, depth)]} for an SVG flame graph.

    x and w are in counts (fg:x, fg:w); depth is the row counted from the root (0, the `all` frame)."""
    root = ET.parse(path).getroot()
    texts = {t.get("id"): "".join(t.itertext()) for t in root.iter(SVG + "text") if t.get("id")}
    container = next((s for s in root.iter(SVG + "svg") if s.get("id") == "frames"), None)
    raw = []
    if container is not None:
        for g in container:
            rect, title = g.find(SVG + "rect"), g.find(SVG + "title")
            if rect is not None and title is not None:
                raw.append((TITLE_TAIL.sub("", title.text or ""), rect))
    frames = []
    if raw:
        ys = sorted({float(rect.get("y")) for _, rect in raw})
        root_y = next(float(rect.get("y")) for name, rect in raw if name == "all")
        inverted = root_y == ys[0] and len(ys) > 1
        depth_of = {y: (i if inverted else len(ys) - 1 - i) for i, y in enumerate(ys)}
        for name, rect in raw:
            frames.append((name, float(_fg(rect, "x")), float(_fg(rect, "w")), depth_of[float(rect.get("y"))]))
    total = 0.0
    if container is not None and container.get("total_samples"):
        total = float(container.get("total_samples"))
    return {"title": texts.get("title"), "subtitle": texts.get("subtitle"), "total": total, "frames": frames}
