#!/bin/bash
# A 3 s incident in a recorded hour (docs/rules.md "Incidents in time"):
# tests/fixtures/hour_db writes an hour of a sync loop (200 calls/s,
# 720,000 calls) through the product's pipeline and writer, with a 3 s CPU
# hog (stress-ng, pid 9001) preempting every sync from 00:39:05, once with
# every row and once under a 4 MiB size cap as an always-on agent keeps it
# (ordinary calls of the past pruned, the per-second aggregates whole).
# explain over the whole hour finds the incident at its own seconds, with
# its culprit, as the only chain, at the severity explain gives the same
# incident in a 20 s trace and in a 20 s window of the hour.
# The full-rate form is bench/explain_hour.sh (bench/RESULTS.md).
# A busy hour: three incidents by three hogs (stress-ng, ffmpeg, gzip) at
# 00:10, 00:30 and 00:50, over a machine whose rcu_preempt preempts the
# loop every second (more preempted time over the hour than any hog's):
# explain over the whole hour, under a 6 MiB cap (database, WAL and reserve
# together; 4 MiB held all three only while the cap left WAL and reserve
# out), gives each incident a chain of its own at its own seconds naming
# its own hog, beside the hour's chain naming rcu_preempt.
set -u
fix=$CW_BUILD/fixtures/hour_db
[ -x "$fix" ] || { echo "FAIL: fixture $fix not built (make fixtures)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$fix" "$tmp/hour.db" 3600 200 2345 >/dev/null || fail "hour_db (every row)"
"$fix" "$tmp/capped.db" 3600 200 2345 4 >/dev/null || fail "hour_db (4 MiB cap)"
"$fix" "$tmp/t20.db" 20 200 8 >/dev/null || fail "hour_db (20 s)"
for db in hour capped t20; do
	"$CW_BIN" explain --db "$tmp/$db.db" --json --no-store >"$tmp/$db.json" || fail "explain $db exited $?"
done
"$CW_BIN" explain --db "$tmp/capped.db" --json --no-store --from 2026-01-01T00:38:57Z --to 2026-01-01T00:39:16Z \
	>"$tmp/w20.json" || fail "explain of a 20 s window exited $?"
"$CW_BIN" explain --db "$tmp/capped.db" --no-store >"$tmp/capped.txt" || fail "explain (text) exited $?"
# A fast loop (30,000 syncs/s for 20 s): the window's tail is too thin for
# a chain but its probe runs, then the incident's seconds are probed
# again; the incident chain's times are its own calls' (once each).
"$fix" "$tmp/fast.db" 20 30000 8 >/dev/null || fail "hour_db (fast)"
"$CW_BIN" explain --db "$tmp/fast.db" --json --no-store >"$tmp/fast.json" || fail "explain fast exited $?"
python3 - "$tmp/fast.json" "$tmp/fast.db" <<'PY' || exit 1
import json, sqlite3, sys
c = json.load(open(sys.argv[1]))["chains"][0]
db = sqlite3.connect(sys.argv[2])
calls, total = db.execute("SELECT count(*), sum(duration_ns) FROM events WHERE op = 'cudaStreamSynchronize'"
                          " AND duration_ns > 1000000").fetchone()
off = db.execute("SELECT sum(end_mono_ns - start_mono_ns) FROM offcpu WHERE by_comm = 'stress-ng'").fetchone()[0]
ev = c["evidence"]
assert c["root_cause"]["kind"] == "cpu_preemption" and c["culprit"]["pid"] == 9001, c["root_cause"]
assert c["slow_count"] == calls and abs(ev["slow_time_ns"] - total) <= 0.01 * total, (c["slow_count"], ev["slow_time_ns"], calls, total)
assert abs(ev["preempted_ns"] - off) <= 0.01 * off and ev["culprit_share"] == 1, (ev, off)
PY

python3 - "$tmp" <<'PY' || exit 1
import json, sys
d = sys.argv[1]
T0 = 1767225600  # 2026-01-01T00:00:00Z
def load(name):
    return json.load(open("%s/%s.json" % (d, name)))
def only_chain(name):
    chains = load(name)["chains"]
    if len(chains) != 1:
        sys.exit("FAIL %s: %d chains: %r" % (name, len(chains), [(c["severity"], c["root_cause"]["kind"], c["headline"]) for c in chains]))
    c = chains[0]
    if (c["root_cause"]["kind"], c["op"], c["pid"]) != ("cpu_preemption", "cudaStreamSynchronize", 4821):
        sys.exit("FAIL %s: chain %r on %s pid %r" % (name, c["root_cause"]["kind"], c["op"], c["pid"]))
    cu = c.get("culprit") or {}
    if (cu.get("comm"), cu.get("pid"), cu.get("cpu")) != ("stress-ng", 9001, 3):
        sys.exit("FAIL %s: culprit %r" % (name, cu))
    return c
ref = only_chain("t20")
for name in ("hour", "capped", "w20"):
    c = only_chain(name)
    if c["severity"] != ref["severity"]:
        sys.exit("FAIL %s: severity %s, the 20 s trace's %s" % (name, c["severity"], ref["severity"]))
    if name == "w20":
        continue
    # Found in time: at its own seconds, not as the hour's tail.
    ev = c["evidence"]
    f, t = ev.get("incident_from_ns"), ev.get("incident_to_ns")
    if f is None or abs(f - (T0 + 2345) * 1e9) > 1e3 or abs(t - ((T0 + 2348) * 1e9 - 1)) > 1e3:
        sys.exit("FAIL %s: incident %r .. %r, want 00:39:05 .. 00:39:08" % (name, f, t))
    if not 500 <= c["count"] <= 700:
        sys.exit("FAIL %s: %d calls in the incident's seconds" % (name, c["count"]))
    w = load(name)["window"]
    if w["calls_analysed"] != 720000:
        sys.exit("FAIL %s: %d calls analysed, the hour has 720000" % (name, w["calls_analysed"]))
# The capped store was pruned: the hour is explained from kept rows.
h = load("capped").get("history")
if not h or h["source"] != "kept rows" or h["pruned_through_ns"] < (T0 + 2400) * 1e9:
    sys.exit("FAIL capped: no pruning recorded: %r" % (h,))
print("ok: %s in the hour, the capped hour, a 20 s window and a 20 s trace" % ref["severity"])
PY
"$fix" "$tmp/busy.db" 3600 200 600,1800,3000 6 1 >/dev/null || fail "hour_db (busy, three incidents)"
"$CW_BIN" explain --db "$tmp/busy.db" --json --no-store >"$tmp/busy.json" || fail "explain busy exited $?"
python3 - "$tmp/busy.json" <<'PY' || exit 1
import json, sys
T0 = 1767225600  # 2026-01-01T00:00:00Z
d = json.load(open(sys.argv[1]))
got = {}
rest = []
for c in d["chains"]:
    f = c["evidence"].get("incident_from_ns")
    cu = c.get("culprit") or {}
    if f is None:
        rest.append((c["root_cause"]["kind"], cu.get("comm")))
        continue
    got[round(f / 1e9) - T0] = (c["root_cause"]["kind"], c["pid"], cu.get("comm"), cu.get("pid"),
                                round((c["evidence"]["incident_to_ns"] + 1) / 1e9) - T0, c["severity"])
want = {600: ("cpu_preemption", 4821, "stress-ng", 9001, 603, "HIGH"),
        1800: ("cpu_preemption", 4821, "ffmpeg", 9002, 1803, "HIGH"),
        3000: ("cpu_preemption", 4821, "gzip", 9003, 3003, "HIGH")}
if got != want:
    sys.exit("FAIL busy: incidents %r, want %r" % (got, want))
if rest != [("cpu_preemption", "rcu_preempt")]:
    sys.exit("FAIL busy: the hour's own chains %r, want rcu_preempt's" % (rest,))
print("ok: three incidents of a busy hour, each with its own hog")
PY
grep -q '^\[HIGH\] cpu_preemption  cudaStreamSynchronize' "$tmp/capped.txt" || fail "text: $(head -5 "$tmp/capped.txt")"
grep -q '00:39:05.000Z  CUDA    incident: 3 s of cudaStreamSynchronize' "$tmp/capped.txt" || fail "text has no incident line"
echo "explain hour ok"
