#!/usr/bin/env python3
"""Validates `stallprof export` outputs with real readers. Usage:

  export_validate.py speedscope FILE          speedscope's JSON schema (jsonschema, draft-07), plus: every stack
                                              index in range (an empty stack is a sample with no frames, kept as
                                              folded input's ` N` lines are), weights as many as samples, no null
  export_validate.py chrome-trace FILE [ORDER]
                                              trace-event structure Perfetto and chrome://tracing read: events with
                                              ph/name/pid/tid/ts (X: dur >= 0; i: s, "t" for markers), stall and
                                              marker categories,
                                              stackFrames parents that exist without cycles, samples whose sf exists
                                              and (timed traces) that fall inside an episode of their thread; the
                                              X slices of each thread nest or are disjoint (Perfetto drops a
                                              crossing one); ORDER, comma-separated event names (markers and
                                              episodes), must each occur once on one thread, starting in that order
  export_validate.py pprof FILE SAMPLES [RAW] gunzips, `protoc --decode perftools.profiles.Profile`, checks string
                                              table entry 0 is "", sample types samples/count then wall/nanoseconds
                                              (untimed counts in a unit: cpu/nanoseconds or <event>/count alone),
                                              the first values add up to SAMPLES (time: RAW, the unrounded folded
                                              total, times its unit's nanoseconds), every location_id exists;
                                              with CAPTURE=1 (a capture's export): every sample labelled stall
                                              and state, mapping 1 with a build_id; then
                                              `go tool pprof -top` when go is installed

FORMATS (default ../shared/formats beside the repository) holds file-format-schema.json and profile.proto.
Prints one line per check; exits 1 on the first failure.
"""
import gzip
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from order_groups import groups_of, in_group_order  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FORMATS = os.environ.get("FORMATS", os.path.join(os.path.dirname(REPO), "shared", "formats"))


def fail(message):
    print(f"FAIL {message}")
    sys.exit(1)


def no_nulls(value, path="$"):
    if value is None:
        fail(f"null at {path} (optional fields must be left out)")
    if isinstance(value, dict):
        for key, item in value.items():
            no_nulls(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            no_nulls(item, f"{path}[{index}]")


def speedscope(path):
    import jsonschema

    with open(os.path.join(FORMATS, "file-format-schema.json")) as f:
        schema = json.load(f)
    with open(path) as f:
        document = json.load(f)
    try:
        jsonschema.validate(document, schema)
    except jsonschema.ValidationError as error:
        fail(f"{path}: schema: {error.message} at {list(error.absolute_path)}")
    no_nulls(document)
    frames = len(document["shared"]["frames"])
    samples = 0
    for profile in document["profiles"]:
        if len(profile["samples"]) != len(profile["weights"]):
            fail(f"{path}: {profile['name']}: {len(profile['weights'])} weights for {len(profile['samples'])} samples")
        for stack in profile["samples"]:
            if any(index < 0 or index >= frames for index in stack):
                fail(f"{path}: {profile['name']}: a stack that indexes outside the {frames} frames")
        if profile["endValue"] < profile["startValue"]:
            fail(f"{path}: {profile['name']}: endValue before startValue")
        samples += len(profile["samples"])
    print(f"ok   speedscope {path}: schema valid, {len(document['profiles'])} profiles, {samples} samples, {frames} frames")


def chrome_trace(path, order=None):
    with open(path) as f:
        document = json.load(f)
    events = document.get("traceEvents")
    if not isinstance(events, list):
        fail(f"{path}: no traceEvents array")
    slices, nested = {}, {}
    counts = {"X": 0, "i": 0, "M": 0}
    for index, event in enumerate(events):
        where = f"{path}: traceEvents[{index}]"
        for key, kind in (("ph", str), ("name", str), ("pid", int), ("tid", int)):
            if not isinstance(event.get(key), kind):
                fail(f"{where}: {key} missing or not {kind.__name__}")
        ph = event["ph"]
        if ph not in counts:
            fail(f"{where}: unexpected ph {ph!r}")
        counts[ph] += 1
        if ph == "M":
            if event["name"] not in ("process_name", "thread_name") or not isinstance(event.get("args", {}).get("name"), str):
                fail(f"{where}: a metadata event without args.name")
            continue
        if not isinstance(event.get("ts"), (int, float)) or event["ts"] < 0:
            fail(f"{where}: ts missing or negative")
        if event.get("cat") not in ("stall", "marker", "profile"):
            fail(f"{where}: category {event.get('cat')!r}")
        if ph == "X":
            if not isinstance(event.get("dur"), (int, float)) or event["dur"] < 0:
                fail(f"{where}: X without a dur >= 0")
            if event["cat"] == "stall" and event["name"] not in ("busy stall", "blocked stall", "saturated", "stall"):
                fail(f"{where}: episode name {event['name']!r}")
            nested.setdefault((event["pid"], event["tid"]), []).append((event["ts"], event["dur"], event["name"]))
            if event["cat"] != "marker":
                # A slice clipped to nest (args.clippedUs) still holds the samples of its recorded extent.
                recorded = event.get("args", {}).get("recordedDurUs", event["dur"])
                slices.setdefault((event["pid"], event["tid"]), []).append((event["ts"], event["ts"] + recorded))
        if ph == "i" and event.get("s") not in ("t", "p", "g"):
            fail(f"{where}: instant without scope s")
        if ph == "i" and event["cat"] == "marker" and event.get("s") != "t":
            fail(f"{where}: a marker instant whose scope is not the thread (s: t)")
    # Perfetto keeps one stack of slices per thread and drops a complete slice that crosses an open one
    # (slice_drop_overlapping_complete_event): the X slices of a thread, in nanoseconds as Perfetto reads them
    # (llround(us * 1000)), must nest or be disjoint.
    for track, spans in nested.items():
        spans = sorted((round(ts * 1000), round(ts * 1000) + round(dur * 1000), name) for ts, dur, name in spans)
        spans.sort(key=lambda span: (span[0], -span[1]))
        stack = []
        for start, end, name in spans:
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack and end > stack[-1][1]:
                fail(f"{path}: {name!r} at {start / 1000} us crosses {stack[-1][2]!r} on pid/tid {track}; "
                     "Perfetto would drop it")
            stack.append((start, end, name))
    frames = document.get("stackFrames", {})
    for key, frame in frames.items():
        if not isinstance(frame.get("name"), str):
            fail(f"{path}: stackFrames[{key}] without a name")
        seen, node = set(), key
        while node is not None:
            if node in seen:
                fail(f"{path}: stackFrames cycle through {node}")
            seen.add(node)
            parent = frames[node].get("parent")
            node = None if parent is None else str(parent)
            if node is not None and node not in frames:
                fail(f"{path}: stackFrames[{key}] has a missing parent {parent}")
    samples = document.get("samples", [])
    timed = "timeAxis" not in document.get("otherData", {})
    for index, sample in enumerate(samples):
        if str(sample.get("sf")) not in frames:
            fail(f"{path}: samples[{index}].sf {sample.get('sf')} is not a stack frame")
        spans = slices.get((sample.get("pid"), sample.get("tid")), [])
        if timed and not any(start - 0.001 <= sample["ts"] <= end + 0.001 for start, end in spans):
            fail(f"{path}: samples[{index}] at {sample['ts']} us lies in no episode of its thread")
    if order:
        # "a,b|c,d": b and c start together, in either order, after a and before d.
        groups = groups_of(order.split(","))
        wanted = [name for group in groups for name in group]
        found = [e for e in events if e["ph"] in ("X", "i") and e["name"] in wanted]
        for name in wanted:
            if sum(1 for e in found if e["name"] == name) != 1:
                fail(f"{path}: {name!r} occurs {sum(1 for e in found if e['name'] == name)} times, not once")
        if len({(e["pid"], e["tid"]) for e in found}) != 1:
            fail(f"{path}: {', '.join(wanted)} are not all on one thread")
        seen = [e["name"] for e in sorted(found, key=lambda e: e["ts"])]
        if not in_group_order(seen, groups):
            fail(f"{path}: events start in the order {', '.join(seen)}, not {order}")
        print(f"ok   chrome-trace {path}: {', '.join(wanted)} on one thread, in that order")
    print(f"ok   chrome-trace {path}: {counts['X']} slices, {counts['i']} instants, {len(samples)} samples, "
          f"{len(frames)} stack frames")


def pprof(path, expected, raw_total=None):
    raw_total = expected if raw_total is None else raw_total
    with open(path, "rb") as f:
        raw = gzip.decompress(f.read())
    decoded = subprocess.run(
        ["protoc", f"--proto_path={FORMATS}", "--decode", "perftools.profiles.Profile", "profile.proto"],
        input=raw, capture_output=True, check=False)
    if decoded.returncode != 0:
        fail(f"{path}: protoc --decode: {decoded.stderr.decode().strip()}")
    text = decoded.stdout.decode()
    strings = re.findall(r'^string_table: "((?:[^"\\]|\\.)*)"', text, re.M)
    if not strings or strings[0] != "":
        fail(f"{path}: string_table[0] is not the empty string")
    types = re.findall(r"^sample_type \{\n  type: (\d+)\n  unit: (\d+)\n\}", text, re.M)
    names = [(strings[int(a)], strings[int(b)]) for a, b in types]
    # Captures and sample counts: samples/count then wall/nanoseconds. Untimed counts in a unit: one type, time as
    # cpu/nanoseconds (counts scaled to nanoseconds), an event as <event>/count.
    single = len(names) == 1 and (names[0] == ("cpu", "nanoseconds") or names[0][1] == "count")
    if names != [("samples", "count"), ("wall", "nanoseconds")] and not single:
        fail(f"{path}: sample types {names}")
    total = 0
    for block in re.findall(r"^sample \{\n(.*?)^\}", text, re.M | re.S):
        values = re.findall(r"^  value: (-?\d+)", block, re.M)
        if len(values) != len(names):
            fail(f"{path}: a sample with {len(values)} values")
        total += int(values[0])
    # Time counts are nanoseconds: the folded total in the input's time unit (ns, us, ms or s) times its scale,
    # each sample rounded to a whole nanosecond.
    scales = [1, 10**3, 10**6, 10**9] if names[0] == ("cpu", "nanoseconds") else [1]
    samples = max(1, text.count("\nsample {"))
    if not any(abs(total - float(raw_total) * k) <= (0 if k == 1 and raw_total == expected else samples) for k in scales):
        fail(f"{path}: samples add up to {total}, expected {expected}")
    if os.environ.get("CAPTURE") == "1":  # a capture's export: labels and the main binary's build-id
        for block in re.findall(r"^sample \{\n(.*?)^\}", text, re.M | re.S):
            keys = {strings[int(k)] for k in re.findall(r"^  label \{\n    key: (\d+)", block, re.M)}
            if not {"stall", "state"} <= keys:
                fail(f"{path}: a sample without the stall and state labels (has {sorted(keys)})")
        first = re.search(r"^mapping \{\n  id: 1\n(.*?)^\}", text, re.M | re.S)
        build = first and re.search(r"^  build_id: (\d+)", first.group(1), re.M)
        if not build or not strings[int(build.group(1))]:
            fail(f"{path}: mapping 1 (the main binary) has no build_id")
    locations = set(re.findall(r"^location \{\n  id: (\d+)", text, re.M))
    used = set(re.findall(r"^  location_id: (\d+)", text, re.M))
    if not used <= locations:
        fail(f"{path}: location ids {sorted(used - locations)[:5]} are not defined")
    print(f"ok   pprof {path}: protoc decodes it, {total} samples, {len(locations)} locations")
    if shutil.which("go"):
        top = subprocess.run(["go", "tool", "pprof", "-top", path], capture_output=True, check=False)
        if top.returncode != 0:
            fail(f"{path}: go tool pprof -top: {top.stderr.decode().strip()}")
        lines = top.stdout.decode().splitlines()
        print(f"ok   pprof {path}: go tool pprof -top reads it ({len(lines)} lines; "
              f"{next((l.strip() for l in lines if 'Total' in l or 'Showing' in l), '')})")
    else:
        print(f"skip pprof {path}: go not installed (go tool pprof)")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    kind, target = sys.argv[1], sys.argv[2]
    if kind == "speedscope":
        speedscope(target)
    elif kind == "chrome-trace" and len(sys.argv) in (3, 4):
        chrome_trace(target, sys.argv[3] if len(sys.argv) == 4 else None)
    elif kind == "pprof" and len(sys.argv) in (4, 5):
        pprof(target, sys.argv[3], sys.argv[4] if len(sys.argv) == 5 else None)
    else:
        print(__doc__)
        sys.exit(2)
