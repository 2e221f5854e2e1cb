#!/usr/bin/env python3
"""Structural checks of a Chrome trace JSON written by causeway export.

export_check.py TRACE [--min-flows N] [--aligned-allreduce [--same-clock]]
  - the file parses as JSON with a traceEvents array;
  - every "X" slice nests on its (pid, tid) track: no partial overlaps;
  - every flow id has exactly one "s" and one "f" (bp "e"), the "f" not
    before the "s", and each end lies inside an "X" slice of its track;
  - every pid has process_name metadata and every track thread_name;
  - with --aligned-allreduce: the k-th ncclAllReduce of every node ends
    within 0.5 ms of the others (clock offsets applied); with --same-clock
    (agents on one host, so the true offsets are 0), plus the spread of the
    offsets the trace records (otherData.clock_offsets_ns): each is then its
    estimate's own error (a loaded machine delays the fan-out's time
    probes), and applying them moves the nodes apart by exactly that much."""
import json
import sys
from collections import defaultdict


def ns(us):
    return round(us * 1000)


def main():
    path = sys.argv[1]
    min_flows = 0
    aligned = "--aligned-allreduce" in sys.argv
    same_clock = "--same-clock" in sys.argv
    if "--min-flows" in sys.argv:
        min_flows = int(sys.argv[sys.argv.index("--min-flows") + 1])
    doc = json.load(open(path))
    evs = doc["traceEvents"]
    tracks = defaultdict(list)
    pnames, tnames = set(), set()
    flows = defaultdict(list)
    for e in evs:
        ph = e["ph"]
        if ph == "X":
            s = ns(e["ts"])
            tracks[(e["pid"], e["tid"])].append((s, s + ns(e["dur"]), e["name"]))
        elif ph == "M" and e["name"] == "process_name":
            pnames.add(e["pid"])
        elif ph == "M" and e["name"] == "thread_name":
            tnames.add((e["pid"], e["tid"]))
        elif ph in ("s", "f"):
            flows[e["id"]].append(e)
    errors = []
    for key, v in tracks.items():
        if key[0] not in pnames:
            errors.append(f"pid {key[0]} has no process_name")
        if key not in tnames:
            errors.append(f"track {key} has no thread_name")
        v.sort(key=lambda x: (x[0], -x[1]))
        stack = []
        for s, e, name in v:
            while stack and stack[-1][1] <= s:
                stack.pop()
            if stack and stack[-1][1] < e:
                errors.append(f"track {key}: {name} [{s},{e}] overlaps {stack[-1][2]} [{stack[-1][0]},{stack[-1][1]}]")
            stack.append((s, e, name))

    def inside(e):
        t = ns(e["ts"])
        return any(s <= t <= end for s, end, _ in tracks.get((e["pid"], e["tid"]), []))

    for fid, v in flows.items():
        kinds = sorted(x["ph"] for x in v)
        if kinds != ["f", "s"]:
            errors.append(f"flow {fid}: ends {kinds}")
            continue
        s = [x for x in v if x["ph"] == "s"][0]
        f = [x for x in v if x["ph"] == "f"][0]
        if f.get("bp") != "e" or f["ts"] < s["ts"] or not inside(s) or not inside(f):
            errors.append(f"flow {fid}: bad ends {s} {f}")
    if len(flows) < min_flows:
        errors.append(f"{len(flows)} flows, want at least {min_flows}")
    if aligned:
        ends = defaultdict(list)
        for (pid, tid), v in tracks.items():
            ends[pid] += sorted(e for s, e, name in v if name == "ncclAllReduce")
        series = list(ends.values())
        n = min(len(x) for x in series)
        worst = max(max(x[k] for x in series) - min(x[k] for x in series) for k in range(n))
        offs = list(doc.get("otherData", {}).get("clock_offsets_ns", {}).values()) if same_clock else []
        allowed = 500000 + (max(offs) - min(offs) if offs else 0)
        if n < 3 or worst > allowed:
            errors.append(f"allreduce completions differ by up to {worst} ns across nodes over {n}"
                          f" (allowed {allowed}: offsets {offs})")
    for e in errors[:20]:
        print("FAIL:", e)
    if errors:
        sys.exit(1)
    print(f"ok: {len(evs)} events, {sum(len(v) for v in tracks.values())} slices on {len(tracks)} tracks, "
          f"{len(flows)} flows")


main()
