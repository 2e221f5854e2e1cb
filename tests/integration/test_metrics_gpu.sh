#!/bin/bash
# GPU health, writer lag and cgroup pressure on /metrics, from a real trace
# of fake_workload with the fake libnvidia-ml.so.1 (two devices, scripted
# through $CW_FAKE_NVML_CTL), run inside a docker-named cgroup:
#  live    `trace --serve` while device 0 throttles for heat and NVML raises
#          Xid 79 and then Xid 48: promtool is clean; every GPU gauge equals
#          the newest stored sample of its device; the thermal reasons are 1
#          and the power ones 0; the workload's device memory is named by
#          pid and process; one Xid per code; the writer lag histogram
#          counted the stored rows and the lag gauge is sane; the
#          workload's cgroup has PSI and throttling counters labelled with
#          its container id
#  after   `serve` on the finished database: the same GPU and Xid series
#          (writer lag is a live-session family only), promtool clean
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
command -v promtool >/dev/null || { echo "FAIL: promtool not installed (scripts/install-deps.sh)"; exit 1; }
. "$CW_ROOT/tests/integration/tenant_lib.sh"
. "$CW_ROOT/tests/lib/auth.sh"
auth_shared # servers and curl share $CW_TOKEN (no token file under the caller's HOME)
FIX=$CW_BUILD/fixtures
NVML=$FIX/fakenvml/libnvidia-ml.so.1
[ -x "$FIX/fake_workload" ] && [ -f "$FIX/fakecuda/libcudart.so.13" ] && [ -f "$NVML" ] ||
	{ echo "FAIL: missing fixtures (make fixtures)"; exit 1; }
D=$(mktemp -d /tmp/cw-mgpu-$$.XXXXXX)
TP= SP=
cleanup() {
	for p in $TP $SP; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	tenant_cleanup
	[ -n "${CW_KEEP:-}" ] || rm -rf "$D"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$D/err" ] && tail -5 "$D/err"; exit 1; }
setctl() { printf "$1" >"$D/ctl.n"; mv "$D/ctl.n" "$D/ctl"; }
CID=$(hexid 64)
CG=/system.slice/docker-$CID.scope
mkcg "$CG" || fail "cannot create cgroup $CG"
export LD_LIBRARY_PATH=$FIX/fakecuda CW_NVML_LIB=$NVML CW_FAKE_NVML=devices=2 CW_FAKE_NVML_CTL=$D/ctl \
	CW_FAKE_SYNC_US=1000
setctl ''

port_of() { # log file: the port serve or trace --serve listens on
	local p i
	for i in $(seq 1 150); do
		p=$(sed -n 's/.*serving https\{0,1\}:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$1")
		[ -n "$p" ] && { echo "$p"; return 0; }
		sleep 0.1
	done
	return 1
}

in_cg "$CG" "$CW_BIN" trace --db "$D/t.db" --no-view --gpu-interval 250ms --serve 127.0.0.1:0 -- \
	"$FIX/fake_workload" -T 12 -m sync >"$D/out" 2>"$D/err" &
TP=$!
PORT=$(port_of "$D/err") || fail "trace did not start serving"
WPID=
for _ in $(seq 1 150); do
	WPID=$(sqlite3 "$D/t.db" "SELECT pid FROM events WHERE source = 'cuda' LIMIT 1" 2>/dev/null)
	[ -n "$WPID" ] && break
	kill -0 "$TP" 2>/dev/null || break
	sleep 0.1
done
[ -n "$WPID" ] || fail "no calls stored"
setctl "pid=$WPID\nthrottle=thermal\nmem_pct=50\nxid=79@1\n"
sleep 1
setctl "pid=$WPID\nthrottle=thermal\nmem_pct=50\nxid=48@2\n"
# NVML's Xid events wait 2 s for the kernel log's line; samples every 250 ms.
sleep 3.5
curl -sfk "${AUTH[@]}" --max-time 10 "https://127.0.0.1:$PORT/metrics" >"$D/live.txt" || fail "live scrape"
kill -0 "$TP" 2>/dev/null || fail "trace ended before the live scrape"
promtool check metrics <"$D/live.txt" || fail "promtool on the live /metrics: $(promtool check metrics <"$D/live.txt" 2>&1)"

check() { # metrics file, database, mode (live|after)
	python3 - "$@" "$WPID" "$CID" <<'PY'
import re, sqlite3, sys
path, db, mode, wpid, cid = sys.argv[1:6]
text = open(path).read()
s = {}
for line in text.splitlines():
    if line.startswith("#") or not line:
        continue
    m = re.match(r'^(\w+)\{(.*)\} (\S+)$', line)
    if not m:
        continue
    labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
    s.setdefault(m.group(1), []).append((labels, float(m.group(3))))
def one(fam, **want):
    got = [v for l, v in s.get(fam, []) if all(l.get(k) == str(w) for k, w in want.items())]
    if len(got) != 1:
        sys.exit("FAIL %s: %s%r: %r" % (mode, fam, want, s.get(fam)))
    return got[0]
con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
devs = con.execute("SELECT device, uuid FROM gpu_devices ORDER BY device").fetchall()
if [d for d, _ in devs] != [0, 1]:
    sys.exit("FAIL %s: devices %r" % (mode, devs))
gauges = [("causeway_gpu_utilization_ratio", "gpu_util", 0.01), ("causeway_gpu_memory_utilization_ratio", "mem_util", 0.01),
          ("causeway_gpu_memory_used_bytes", "mem_used", 1), ("causeway_gpu_memory_free_bytes", "mem_free", 1),
          ("causeway_gpu_memory_total_bytes", "mem_total", 1), ("causeway_gpu_power_watts", "power_mw", 1e-3),
          ("causeway_gpu_energy_joules_total", "energy_mj", 1e-3), ("causeway_gpu_sm_clock_hertz", "sm_mhz", 1e6),
          ("causeway_gpu_memory_clock_hertz", "mem_mhz", 1e6), ("causeway_gpu_pcie_replays_total", "pcie_replay", 1)]
for dev, uuid in devs:
    newest = con.execute("SELECT wall_ns, clock_reasons, temp_gpu, " + ", ".join(c for _, c, _ in gauges) +
                         " FROM gpu_samples WHERE device = ? ORDER BY wall_ns DESC LIMIT 1", (dev,)).fetchone()
    ts = one("causeway_gpu_last_sample_timestamp_seconds", gpu=dev, uuid=uuid)
    # The scrape may read a sample newer than the one stored when it ran
    # (live), never an older one; after the trace they are the same.
    if mode == "after" and abs(ts - newest[0] / 1e9) > 1e-3:
        sys.exit("FAIL %s: gpu %d last sample %r, store %r" % (mode, dev, ts, newest[0]))
    if mode == "after":
        for (fam, col, scale), v in zip(gauges, newest[3:]):
            if v is not None and abs(one(fam, gpu=dev) - v * scale) > 1e-6 * max(1, abs(v * scale)):
                sys.exit("FAIL %s: %s gpu %d = %r, newest sample %s = %r" % (mode, fam, dev, one(fam, gpu=dev), col, v))
    one("causeway_gpu_info", gpu=dev, uuid=uuid)
    if one("causeway_gpu_temperature_celsius", gpu=dev, sensor="gpu") != 91:
        sys.exit("FAIL %s: gpu %d temperature while throttling" % (mode, dev))
    for reason, want in (("hw_thermal", 1), ("sw_thermal", 1), ("sw_power_cap", 0), ("hw_power_brake", 0), ("idle", 0)):
        if one("causeway_gpu_clock_event_active", gpu=dev, reason=reason) != want:
            sys.exit("FAIL %s: gpu %d reason %s != %d" % (mode, dev, reason, want))
    if one("causeway_gpu_sm_clock_hertz", gpu=dev) != 1110e6:
        sys.exit("FAIL %s: gpu %d throttled SM clock" % (mode, dev))
    if one("causeway_gpu_memory_used_bytes", gpu=dev) != 80 * 2**30 // 100 * 50:
        sys.exit("FAIL %s: gpu %d memory used" % (mode, dev))
# Per-process memory: the workload on device 0 only (the fake's one process).
pm = s.get("causeway_gpu_process_memory_used_bytes", [])
if [(l["gpu"], l["pid"], l["process"], v) for l, v in pm] != [("0", wpid, "fake_workload", 80 * 2**30 // 100 * 50)]:
    sys.exit("FAIL %s: per-process memory %r" % (mode, pm))
xid = {(l["gpu"], l["code"], l["xid_severity"]): v for l, v in s.get("causeway_gpu_xid_errors_total", [])}
if xid != {("0", "79", "critical"): 1, ("0", "48", "critical"): 1}:
    sys.exit("FAIL %s: Xid counters %r" % (mode, xid))
if mode == "live":
    n = one("causeway_writer_commit_lag_seconds_count")
    stored = con.execute("SELECT count(*) FROM events").fetchone()[0]
    total = one("causeway_writer_commit_lag_seconds_sum")
    buckets = sorted((float("inf") if l["le"] == "+Inf" else float(l["le"]), v)
                     for l, v in s["causeway_writer_commit_lag_seconds_bucket"])
    if not (100 <= n) or buckets[-1][1] != n or any(a[1] > b[1] for a, b in zip(buckets, buckets[1:])):
        sys.exit("FAIL live: writer commit lag histogram: count %r, buckets %r" % (n, buckets))
    # Committed within a few flushes on a loaded machine: mean well under 5 s.
    if not (0 < total / n < 5) or not (0 <= one("causeway_writer_lag_seconds") < 5):
        sys.exit("FAIL live: writer lag mean %r, gauge %r" % (total / n, one("causeway_writer_lag_seconds")))
    if one("causeway_writer_pending_rows") < 0:
        sys.exit("FAIL live: pending rows")
    print("live: writer lag mean %.1f ms over %d rows (%d events stored)" % (1e3 * total / n, n, stored))
psi = [(l, v) for l, v in s.get("causeway_cgroup_pressure_seconds_total", []) if l.get("container") == cid]
kinds = {(l["resource"], l["kind"]) for l, _ in psi}
if not {("cpu", "some"), ("memory", "some"), ("io", "some")} <= kinds or any(v < 0 for _, v in psi):
    sys.exit("FAIL %s: PSI of the workload's container: %r" % (mode, psi))
if not [v for l, v in s.get("causeway_cgroup_cpu_throttled_seconds_total", []) if l.get("container") == cid]:
    sys.exit("FAIL %s: no CPU throttled counter for the container" % mode)
print("%s: 2 GPUs, process memory, Xid 79 and 48, PSI %s" % (mode, sorted(kinds)))
PY
}
check "$D/live.txt" "$D/t.db" live || fail "live checks"

wait "$TP"
rc=$?
TP=
[ $rc = 0 ] || fail "trace exited $rc"
"$CW_BIN" serve --db "$D/t.db" --no-tls --listen 127.0.0.1:0 2>"$D/serve.err" &
SP=$!
PORT=$(port_of "$D/serve.err") || fail "serve did not start"
curl -sf "${AUTH[@]}" --max-time 10 "http://127.0.0.1:$PORT/metrics" >"$D/after.txt" || fail "scrape after the trace"
promtool check metrics <"$D/after.txt" || fail "promtool after the trace: $(promtool check metrics <"$D/after.txt" 2>&1)"
grep -q '^causeway_writer_' "$D/after.txt" && fail "writer lag served from a finished database"
check "$D/after.txt" "$D/t.db" after || fail "checks after the trace"
echo ok
