#!/bin/bash
# Perfetto export of GPU telemetry: per-GPU counter tracks (utilization,
# memory, clocks, temperature/power, clock-event reasons) from the
# thermal-throttling demo, showing the clock drop and the thermal reason
# at the same points; an Xid instant marker from the xid-fault demo; and
# no GPU tracks for a store without GPU samples.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
for s in thermal-throttling xid-fault healthy; do
	"$CW_BIN" demo "$s" --db "$tmp/$s.db" >/dev/null || fail "demo $s"
	"$CW_BIN" export --db "$tmp/$s.db" -o "$tmp/$s.json" >/dev/null 2>&1 || fail "export $s"
done
python3 - "$tmp" <<'PY' || exit 1
import json, sys
t = sys.argv[1]
ev = json.load(open(f"{t}/thermal-throttling.json"))["traceEvents"]
gpu = [e for e in ev if e["ph"] == "C" and e["cat"] == "gpu"]
names = {e["name"] for e in gpu}
assert names == {"gpu0 utilization %", "gpu0 memory used GiB", "gpu0 clocks MHz", "gpu0 temperature C / power W",
                 "gpu0 clock-event reasons"}, names
clk = {e["ts"]: e["args"]["sm MHz"] for e in gpu if e["name"] == "gpu0 clocks MHz"}
why = {e["ts"]: e["args"] for e in gpu if e["name"] == "gpu0 clock-event reasons"}
hot = [ts for ts, a in why.items() if a["thermal"] == 1]
assert len(hot) >= 10 and all(clk[ts] < 600 for ts in hot), (len(hot), [clk[ts] for ts in hot][:5])
assert all(clk[ts] == 1980 for ts, a in why.items() if a["thermal"] == 0), "unthrottled clock"
temp = [e["args"]["temp C"] for e in gpu if e["name"] == "gpu0 temperature C / power W"]
assert max(temp) == 94 and min(temp) >= 70, (min(temp), max(temp))
ev = json.load(open(f"{t}/xid-fault.json"))["traceEvents"]
x = [e for e in ev if e["ph"] == "i" and e["name"].startswith("Xid")]
assert len(x) == 1 and x[0]["name"] == "Xid 79" and x[0]["args"]["pid"] == 4821 and x[0]["args"]["device"] == 0, x
ev = json.load(open(f"{t}/healthy.json"))["traceEvents"]
assert not [e for e in ev if e.get("cat") == "gpu"], "healthy demo has GPU tracks"
print("ok perfetto gpu:", len(gpu), "counter points,", len(hot), "throttled")
PY
