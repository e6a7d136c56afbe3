// The flame graph's script, embedded in every SVG `stallprof flamegraph` writes, inside a CDATA section: it
// must never hold the CDATA end marker (two closing brackets, then ">"). Compiled into the stallprof binary
// as FlameGraphScript.source by the EmbedText build-tool plugin (Plugins/EmbedText); tools/check-flamegraph-js.sh
// checks its syntax (node --check) in CI.
//
// Tooltips in the details line, click to zoom, Reset Zoom, search by regular expression (button, Ctrl-F or F3)
// with the matched percentage, the "ic" toggle (or Ctrl-I) that makes the search ignore case, and the view kept
// in the URL (?x= start count of the zoomed frame, ?y= its row, ?s= the search, ?i=1 ignoring case) so a link
// reproduces it. Labels are created only where they fit.
//
// The SVG writer defines fg_nametype, fg_fontsize, fg_fontwidth, fg_inverted and fg_searchcolor before this script.
/* global fg_nametype, fg_fontsize, fg_fontwidth, fg_inverted, fg_searchcolor */
"use strict";
var fg_details, fg_searchbtn, fg_icbtn, fg_unzoombtn, fg_matched, fg_frames, fg_total, fg_term = null, fg_zoomed = null;
var fg_ignorecase = false;
var SVGNS = "http://www.w3.org/2000/svg";
function init(evt) {
    fg_details = document.getElementById("details").firstChild;
    fg_searchbtn = document.getElementById("search");
    fg_icbtn = document.getElementById("ignorecase");
    fg_unzoombtn = document.getElementById("unzoom");
    fg_matched = document.getElementById("matched");
    fg_frames = document.getElementById("frames");
    fg_total = parseFloat(fg_frames.getAttribute("total_samples"));
    var p = fg_params();
    if (p.x !== undefined && p.y !== undefined) {
        var g = fg_find(p.x, p.y);
        if (g) fg_zoom(g);
    }
    if (p.i === "1") fg_set_ignorecase(true);
    if (p.s) fg_search(p.s);
}
function fg_num(e, name) { return parseFloat(e.getAttribute(name)); }
function fg_rect(g) { return g.getElementsByTagName("rect")[0]; }
function fg_title(g) { return g.getElementsByTagName("title")[0].textContent; }
function fg_name(g) { return fg_title(g).replace(/ \([^(]*\)$/, ""); }
function fg_find(x, y) {
    var el = fg_frames.children;
    for (var i = 0; i < el.length; i++) {
        var r = fg_rect(el[i]);
        if (r.getAttribute("fg:x") === x && r.getAttribute("y") === y) return el[i];
    }
    return null;
}
function fg_params() {
    var result = {};
    var parts = window.location.search.substring(1).split("&");
    for (var i = 0; i < parts.length; i++) {
        var kv = parts[i].split("=");
        if (kv[0] && kv.length > 1) {
            try { result[kv[0]] = decodeURIComponent(kv.slice(1).join("=").replace(/\+/g, " ")); } catch (e) {}
        }
    }
    return result;
}
function fg_set_params(changes) {
    var p = fg_params();
    for (var k in changes) { if (changes[k] === null) delete p[k]; else p[k] = changes[k]; }
    var q = [];
    for (var k in p) q.push(k + "=" + encodeURIComponent(p[k]));
    var url = window.location.pathname + (q.length ? "?" + q.join("&") : "") + window.location.hash;
    try { history.replaceState(null, "", url); } catch (e) { /* file: URLs may refuse; the view still works */ }
}
function fg_label(g) {
    var r = fg_rect(g);
    var px = fg_num(r, "width") / 100 * fg_frames.width.baseVal.value - 3;
    var fit = Math.floor(px / (fg_fontsize * fg_fontwidth));
    var t = g.getElementsByTagName("text")[0];
    if (fit < 3) { if (t) g.removeChild(t); return; }
    if (!t) {
        t = document.createElementNS(SVGNS, "text");
        t.setAttribute("y", (fg_num(r, "y") + fg_num(r, "height") / 2 + 3).toFixed(2));
        g.appendChild(t);
    }
    var name = fg_name(g);
    t.setAttribute("x", (fg_num(r, "x") + 300 / fg_frames.width.baseVal.value).toFixed(4) + "%");
    t.textContent = name.length < fit ? name : name.substring(0, fit - 2) + "..";
}
function fg_place(g, x, w) {
    var r = fg_rect(g);
    r.setAttribute("x", x.toFixed(4) + "%");
    r.setAttribute("width", w.toFixed(4) + "%");
    fg_label(g);
}
function fg_zoom(node) {
    var r = fg_rect(node);
    var xmin = fg_num(r, "fg:x"), width = fg_num(r, "fg:w"), xmax = xmin + width, ymin = fg_num(r, "y");
    var eps = width * 1e-9;
    fg_zoomed = node;
    fg_unzoombtn.classList.remove("hide");
    var el = fg_frames.children;
    for (var i = 0; i < el.length; i++) {
        var g = el[i], a = fg_rect(g);
        var ex = fg_num(a, "fg:x"), ew = fg_num(a, "fg:w"), ey = fg_num(a, "y");
        g.classList.remove("parent");
        g.classList.remove("hide");
        if (fg_inverted ? ey < ymin : ey > ymin) {
            if (ex <= xmin + eps && ex + ew >= xmax - eps) { g.classList.add("parent"); fg_place(g, 0, 100); }
            else g.classList.add("hide");
        } else if (ex < xmin - eps || ex >= xmax - eps) {
            g.classList.add("hide");
        } else {
            fg_place(g, 100 * (ex - xmin) / width, 100 * ew / width);
        }
    }
    fg_place_markers(xmin, width);
    if (fg_term !== null) fg_search(fg_term);
}
function fg_unzoom() {
    fg_zoomed = null;
    fg_unzoombtn.classList.add("hide");
    var el = fg_frames.children;
    for (var i = 0; i < el.length; i++) {
        var g = el[i], r = fg_rect(g);
        g.classList.remove("parent");
        g.classList.remove("hide");
        fg_place(g, 100 * fg_num(r, "fg:x") / fg_total, 100 * fg_num(r, "fg:w") / fg_total);
    }
    fg_place_markers(0, fg_total);
    if (fg_term !== null) fg_search(fg_term);
}
function fg_place_markers(xmin, width) {
    var m = document.getElementById("markers");
    if (!m || !(width > 0)) return;
    var el = m.children, w = m.width.baseVal.value;
    for (var i = 0; i < el.length; i++) {
        var g = el[i], a = 100 * (fg_num(g, "fg:x") - xmin) / width, b = a + 100 * fg_num(g, "fg:w") / width;
        if (b < 0 || a > 100) { g.classList.add("hide"); continue; }
        g.classList.remove("hide");
        a = Math.max(a, 0); b = Math.min(b, 100);
        var r = g.getElementsByTagName("rect")[0], l = g.getElementsByTagName("line")[0];
        if (r) { r.setAttribute("x", a.toFixed(4) + "%"); r.setAttribute("width", (b - a).toFixed(4) + "%"); }
        if (l) { l.setAttribute("x1", a.toFixed(4) + "%"); l.setAttribute("x2", a.toFixed(4) + "%"); }
        var t = g.getElementsByTagName("text")[0], end = a > 85;
        t.setAttribute("x", (end ? a - 300 / w : a + 300 / w).toFixed(4) + "%");
        if (end) t.setAttribute("text-anchor", "end"); else t.removeAttribute("text-anchor");
    }
}
function fg_reset_search() {
    var el = fg_frames.getElementsByTagName("rect");
    for (var i = 0; i < el.length; i++) {
        var orig = el[i].getAttribute("fg:orig_fill");
        if (orig !== null) { el[i].setAttribute("fill", orig); el[i].removeAttribute("fg:orig_fill"); }
    }
    fg_term = null;
    fg_searchbtn.classList.remove("show");
    fg_searchbtn.firstChild.nodeValue = "Search";
    fg_matched.firstChild.nodeValue = " ";
}
function fg_search(term) {
    var re;
    try { re = new RegExp(term, fg_ignorecase ? "i" : ""); } catch (e) { fg_matched.firstChild.nodeValue = "Bad regex: " + e.message; return; }
    fg_reset_search();
    fg_term = term;
    var el = fg_frames.children, matches = {}, base = fg_total;
    if (fg_zoomed) base = fg_num(fg_rect(fg_zoomed), "fg:w");
    for (var i = 0; i < el.length; i++) {
        var g = el[i];
        if (g.classList.contains("hide") || g.classList.contains("parent")) continue;
        if (!re.test(fg_name(g))) continue;
        var r = fg_rect(g), x = fg_num(r, "fg:x"), w = fg_num(r, "fg:w");
        r.setAttribute("fg:orig_fill", r.getAttribute("fill"));
        r.setAttribute("fill", fg_searchcolor);
        if (!(x in matches) || w > matches[x]) matches[x] = w;
    }
    var xs = Object.keys(matches).map(parseFloat).sort(function (a, b) { return a - b; });
    var count = 0, end = -Infinity;
    for (var j = 0; j < xs.length; j++) {
        if (xs[j] >= end) { count += matches[xs[j]]; end = xs[j] + matches[xs[j]]; }
    }
    fg_searchbtn.classList.add("show");
    fg_searchbtn.firstChild.nodeValue = "Reset Search";
    var pct = base > 0 ? 100 * count / base : 0;
    fg_matched.firstChild.nodeValue = "Matched: " + (pct === 100 ? "100" : pct.toFixed(1)) + "%";
    fg_set_params({ s: term });
}
function fg_prompt() {
    if (fg_term !== null) { fg_reset_search(); fg_set_params({ s: null }); return; }
    var term = prompt("Enter a search term (regexp allowed, eg: ^ext4_)" + (fg_ignorecase ? ", ignoring case" : "")
        + "\nPress Ctrl-I or click ic to toggle case sensitivity", "");
    if (term) fg_search(term);
}
// The "ic" toggle: the button shows when search ignores case; the current search is run again either way.
function fg_set_ignorecase(on) {
    fg_ignorecase = on;
    if (on) fg_icbtn.classList.add("show"); else fg_icbtn.classList.remove("show");
}
function fg_toggle_ignorecase() {
    fg_set_ignorecase(!fg_ignorecase);
    fg_set_params({ i: fg_ignorecase ? "1" : null });
    if (fg_term !== null) fg_search(fg_term);
}
function fg_group(node) {
    while (node && node.parentNode) {
        if (node.parentNode === fg_frames) return node;
        node = node.parentNode;
    }
    return null;
}
window.addEventListener("click", function (e) {
    var g = fg_group(e.target);
    if (g) {
        if (g.classList.contains("parent")) fg_unzoom();
        fg_zoom(g);
        var r = fg_rect(g);
        fg_set_params({ x: r.getAttribute("fg:x"), y: r.getAttribute("y") });
    } else if (e.target.id === "unzoom") {
        fg_unzoom();
        fg_set_params({ x: null, y: null });
    } else if (e.target.id === "search") {
        fg_prompt();
    } else if (e.target.id === "ignorecase") {
        fg_toggle_ignorecase();
    }
}, false);
window.addEventListener("mouseover", function (e) {
    var g = fg_group(e.target);
    if (g) fg_details.nodeValue = fg_nametype + " " + fg_title(g);
}, false);
window.addEventListener("mouseout", function (e) {
    if (fg_group(e.target)) fg_details.nodeValue = " ";
}, false);
window.addEventListener("keydown", function (e) {
    if (e.keyCode === 114 || (e.ctrlKey && e.keyCode === 70)) { e.preventDefault(); fg_prompt(); }
    else if (e.ctrlKey && e.keyCode === 73) { e.preventDefault(); fg_toggle_ignorecase(); }
}, false);
