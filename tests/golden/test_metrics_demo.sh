#!/bin/bash
# /metrics on every demo scenario's database: promtool finds nothing to
# complain about, every op's histogram agrees with `query --json` on the
# same file (count, sum, and the bucket that holds the p50), buckets are
# cumulative, and the families that alerts and dashboards use are there.
set -u
command -v promtool >/dev/null || { echo "FAIL: promtool not installed (scripts/install-deps.sh)"; exit 1; }
D=$(mktemp -d)
SP=
cleanup() { [ -n "$SP" ] && kill "$SP" 2>/dev/null; wait 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
. "$CW_ROOT/tests/lib/auth.sh"
. "$CW_ROOT/tests/lib/demo_db.sh"
auth_shared # every server and client here shares $CW_TOKEN

scenarios=$("$CW_BIN" demo --list | awk '{print $1}')
[ "$(echo "$scenarios" | wc -l)" -ge 10 ] || fail "demo --list: $scenarios"
for s in $scenarios; do
	db=$D/$s.db
	demo_db "$s" "$db" 2>/dev/null || fail "demo $s"
	"$CW_BIN" explain --db "$db" >/dev/null 2>&1 # stores the chains /metrics counts
	"$CW_BIN" query --db "$db" --json >"$D/q.json" || fail "query $s"
	"$CW_BIN" serve --db "$db" --no-tls --listen 127.0.0.1:0 2>"$D/serve-$s.log" &
	SP=$!
	port=
	for _ in $(seq 1 100); do
		port=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$D/serve-$s.log")
		[ -n "$port" ] && break
		sleep 0.05
	done
	[ -n "$port" ] || fail "serve $s: $(cat "$D/serve-$s.log")"
	curl -sf "${AUTH[@]}" --max-time 10 "http://127.0.0.1:$port/metrics" >"$D/m.txt" || fail "scrape $s"
	kill "$SP"
	wait "$SP" 2>/dev/null
	SP=
	promtool check metrics <"$D/m.txt" || fail "promtool on $s: $(promtool check metrics <"$D/m.txt" 2>&1)"
	python3 - "$D/m.txt" "$D/q.json" "$s" "$db" <<'PY' || exit 1
import json, re, sqlite3, sys
text = open(sys.argv[1]).read()
ops = json.load(open(sys.argv[2]))
scen = sys.argv[3]
series = {}
for line in text.splitlines():
    if line.startswith("#") or not line:
        continue
    m = re.match(r'^(\w+)\{(.*)\} (\S+)$', line)
    if not m:
        m2 = re.match(r'^(\w+) (\S+)$', line)
        if not m2:
            sys.exit("FAIL %s: unparsable line %r" % (scen, line))
        series.setdefault(m2.group(1), []).append(({}, float(m2.group(2))))
        continue
    labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
    series.setdefault(m.group(1), []).append((labels, float(m.group(3))))
for fam in ("causeway_info", "causeway_events_lost_total",
            "causeway_session_stat", "causeway_host_cpu_busy_ratio", "process_resident_memory_bytes"):
    if fam not in series:
        sys.exit("FAIL %s: family %s missing" % (scen, fam))
def op_series(name, op):
    return [(l, v) for l, v in series.get(name, []) if l.get("op") == op and l.get("source") == o["source"]]
for o in ops:
    op = o["op"]
    cnt = op_series("causeway_op_duration_seconds_count", op)
    if len(cnt) != 1 or cnt[0][1] != o["count"]:
        sys.exit("FAIL %s: %s count %r, query says %d" % (scen, op, cnt, o["count"]))
    sm = op_series("causeway_op_duration_seconds_sum", op)
    if abs(sm[0][1] - o["total_ns"] / 1e9) > 1e-6 * max(1.0, o["total_ns"] / 1e9):
        sys.exit("FAIL %s: %s sum %r, query says %d ns" % (scen, op, sm, o["total_ns"]))
    buckets = sorted(((float("inf") if l["le"] == "+Inf" else float(l["le"])), v)
                     for l, v in op_series("causeway_op_duration_seconds_bucket", op))
    if len(buckets) != 27 or buckets[-1][1] != o["count"]:
        sys.exit("FAIL %s: %s buckets %r" % (scen, op, buckets))
    if any(b[1] > c[1] for b, c in zip(buckets, buckets[1:])):
        sys.exit("FAIL %s: %s buckets not cumulative" % (scen, op))
    # The first bucket holding half the calls must bound query's p50 from above,
    # and the bucket before it from below.
    half = next(i for i, b in enumerate(buckets) if b[1] * 2 >= o["count"])
    p50 = o["p50_ns"] / 1e9
    lo = buckets[half - 1][0] if half else 0
    if not (lo * 0.95 <= p50 <= buckets[half][0] * 1.05):
        sys.exit("FAIL %s: %s p50 %g outside bucket (%g, %g]" % (scen, op, p50, lo, buckets[half][0]))
# Failing calls: one causeway_op_failures_total series per op that failed,
# equal to query's failed (both sum the aggregates' errors), none for the
# others; the family is declared on every database.
if not re.search(r"^# TYPE causeway_op_failures_total counter$", text, re.M):
    sys.exit("FAIL %s: causeway_op_failures_total not declared" % scen)
fails = {(l["source"], l["op"]): v for l, v in series.get("causeway_op_failures_total", [])}
want = {(o["source"], o["op"]): o["failed"] for o in ops if o["failed"]}
if fails != want:
    sys.exit("FAIL %s: failure series %r, query's failed %r" % (scen, fails, want))
if want:
    open(sys.argv[1] + ".failing-" + scen, "w").write(repr(want))
# GPU scenarios: each gauge is the device's newest stored sample, every
# clock-event bit its own 0/1 series, Xid faults counted by code.
con = sqlite3.connect("file:%s?mode=ro" % sys.argv[4], uri=True)
newest = con.execute("SELECT device, temp_gpu, power_mw, sm_mhz, mem_used, gpu_util, clock_reasons, wall_ns"
                     " FROM gpu_samples ORDER BY wall_ns DESC LIMIT 1").fetchone()
def gpu(fam, **want):
    return [v for l, v in series.get(fam, []) if all(l.get(k) == str(w) for k, w in want.items())]
if newest:
    dev, temp, mw, mhz, used, util, reasons, wall = newest
    for fam, want in (("causeway_gpu_temperature_celsius", temp), ("causeway_gpu_power_watts", mw / 1e3),
                      ("causeway_gpu_sm_clock_hertz", mhz * 1e6), ("causeway_gpu_memory_used_bytes", used),
                      ("causeway_gpu_utilization_ratio", util / 100), ("causeway_gpu_last_sample_timestamp_seconds", wall / 1e9)):
        got = gpu(fam, gpu=dev, **({"sensor": "gpu"} if "temperature" in fam else {}))
        if len(got) != 1 or abs(got[0] - want) > 1e-6 * max(1, abs(want)):
            sys.exit("FAIL %s: %s = %r, newest sample %r" % (scen, fam, got, want))
    bits = {"sw_power_cap": 4, "hw_slowdown": 8, "sw_thermal": 0x20, "hw_thermal": 0x40, "hw_power_brake": 0x80}
    for reason, bit in bits.items():
        if gpu("causeway_gpu_clock_event_active", gpu=dev, reason=reason) != [1 if reasons & bit else 0]:
            sys.exit("FAIL %s: reason %s, newest sample's bits %#x" % (scen, reason, reasons))
    xids = {str(c): n for c, n in con.execute("SELECT arg0, count(*) FROM events WHERE op = 'xid' GROUP BY arg0")}
    got = {l["code"]: v for l, v in series.get("causeway_gpu_xid_errors_total", [])}
    if got != xids:
        sys.exit("FAIL %s: Xid series %r, stored %r" % (scen, got, xids))
chains = sum(v for l, v in series.get("causeway_chains", []))
if scen != "healthy" and chains < 1:
    sys.exit("FAIL %s: no stored chain counted" % scen)
print("%s: %d ops, %d chains, promtool clean" % (scen, len(ops), chains))
PY
done
# The check above is not vacuous: the error demos' failing calls are served.
ls "$D"/m.txt.failing-* >/dev/null 2>&1 || fail "no demo served a causeway_op_failures_total series"
echo ok
