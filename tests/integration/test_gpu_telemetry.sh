#!/bin/bash
# GPU telemetry end to end with the fake libnvidia-ml.so.1 (loaded through
# causeway's own dlopen path, $CW_NVML_LIB) and fake_cudart, scripted
# through one control file both read ($CW_FAKE_NVML_CTL / $CW_FAKE_CTL):
#  check   NVML found (driver, devices), or a clean "no GPU telemetry"
#  healthy a GPU that never throttles: samples, devices and per-process
#          memory stored, no GPU chain
#  thermal syncs 6x slower while NVML reports thermal slowdown -> thermal_throttling
#  power   the same under a power cap -> power_capping
#  memory  allocations slow and failing while the device is 96 % full ->
#          gpu_memory_pressure; an NVML Xid event (48) -> xid_fault from NVML
#  xid     Xid 79 lines written to the real kernel log (twice, plus the
#          same fault from NVML, plus a malformed line) -> one event naming
#          the process, deduplicated -> xid_fault
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF and /dev/kmsg"; exit 77; }
FIX=$CW_BUILD/fixtures
NVML=$FIX/fakenvml/libnvidia-ml.so.1
[ -x "$FIX/fake_workload" ] && [ -f "$FIX/fakecuda/libcudart.so.13" ] && [ -f "$NVML" ] ||
	{ echo "missing fixtures (make fixtures)"; exit 1; }
D=$(mktemp -d /tmp/cw-gputel-$$.XXXXXX)
bg=()
cleanup() { for p in "${bg[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
[ -n "${CW_KEEP:-}" ] && trap - EXIT
fail() { echo "FAIL: $*"; [ -f "$D/err" ] && tail -5 "$D/err"; exit 1; }
export LD_LIBRARY_PATH=$FIX/fakecuda CW_NVML_LIB=$NVML CW_FAKE_NVML_CTL=$D/ctl CW_FAKE_CTL=$D/ctl CW_FAKE_MODE=sleep
MARK=cwx$$
setctl() { printf "$1" >"$D/ctl.n"; mv "$D/ctl.n" "$D/ctl"; }

# check
"$CW_BIN" check --json >"$D/check.json"
CW_NVML_LIB=/nonexistent/libnvidia-ml.so.1 "$CW_BIN" check --json >"$D/check-none.json"
# The config names the library when the environment does not.
printf 'gpu:\n  nvml_lib: %s\n' "$NVML" >"$D/c.yaml"
env -u CW_NVML_LIB "$CW_BIN" --config "$D/c.yaml" check | grep -q '^ok  *gpu telemetry .*driver 580.65.06-fake' ||
	fail "check: gpu.nvml_lib from the config"
python3 - "$D/check.json" "$D/check-none.json" <<'PY' || fail check
import json, sys
r = json.load(open(sys.argv[1]))
c = {x["name"]: x for x in r["checks"]}["gpu telemetry"]
assert c["status"] == "ok" and "driver 580.65.06-fake" in c["detail"] and "1 device(s)" in c["detail"], c
assert r["gpus"][0]["pci_bus_id"] == "00000000:3B:00.0" and r["gpus"][0]["uuid"].startswith("GPU-"), r["gpus"]
r = json.load(open(sys.argv[2]))
c = {x["name"]: x for x in r["checks"]}["gpu telemetry"]
assert c["status"] == "warn" and c["detail"].startswith("no GPU telemetry:") and r["gpus"] == [], c
print("ok check")
PY

trace() { # name, workload args...: runs in the background (tp), returns once its calls are stored
	local name=$1 i; shift
	timeout 60 "$CW_BIN" trace --db "$D/$name.db" --no-view --gpu-interval 250ms -- \
		"$FIX/fake_workload" -w 500 "$@" >"$D/out" 2>"$D/err" &
	tp=$!
	bg+=($tp)
	# Episodes are timed from the workload's first calls, not from the
	# start of trace (attaching takes longer on a loaded machine).
	for i in $(seq 1 150); do
		[ "$(sqlite3 "$D/$name.db" "SELECT count(*) FROM events WHERE source = 'cuda'" 2>/dev/null)" -gt 0 ] 2>/dev/null && return 0
		kill -0 "$tp" 2>/dev/null || break
		sleep 0.1
	done
	fail "$name: no calls stored"
}
finish() { # name
	wait "$tp" || fail "$1: trace exited $?"
	"$CW_BIN" explain --db "$D/$1.db" --json --no-store >"$D/$1.json" || fail "$1: explain"
}
episode() { # delay, control text, length: the control file says text for length seconds
	sleep "$1"; setctl "$2"; sleep "$3"; setctl ''
}
kinds() { python3 -c 'import json,sys; print(" ".join(c["root_cause"]["kind"] for c in json.load(open(sys.argv[1]))["chains"]))' "$1"; }
GPU_KINDS="xid_fault thermal_throttling power_capping gpu_memory_pressure training_stall"

# healthy
setctl "pid=$$\n"
CW_FAKE_SYNC_US=1000 trace healthy -T 3 -m sync
finish healthy
q=$(sqlite3 "$D/healthy.db" "SELECT (SELECT count(*) FROM gpu_samples WHERE uuid LIKE 'GPU-fa4e%' AND sm_mhz = 1980
	AND clock_reasons = 0 AND mem_total = 85899345920 AND temp_gpu = 62 AND power_mw = 450000 AND ecc_sbe = 3),
	(SELECT count(*) FROM gpu_devices WHERE pci_bus_id = '00000000:3B:00.0' AND name LIKE 'NVIDIA H100%' AND driver = '580.65.06-fake'),
	(SELECT count(*) FROM gpu_processes WHERE pid = $$ AND used_bytes > 0 AND sm_util = 88),
	(SELECT value FROM counters WHERE name = 'trace.gpu.samples')")
IFS='|' read -r ns nd np nc <<<"$q"
[ "$ns" -ge 8 ] && [ "$nd" = 1 ] && [ "$np" -ge 8 ] && [ "$nc" -ge 8 ] || fail "healthy: stored $q"
for k in $(kinds "$D/healthy.json"); do
	case " $GPU_KINDS " in *" $k "*) fail "healthy: $k chain";; esac
done
echo "ok healthy: $ns samples, $np process rows, chains: $(kinds "$D/healthy.json")"

# thermal, power
for kind in thermal power; do
	setctl ''
	CW_FAKE_SYNC_US=1000 trace "$kind" -T 5 -m sync
	episode 1 "throttle=$kind\nCW_FAKE_SYNC_US=6000\n" 2
	finish "$kind"
	want=$([ $kind = thermal ] && echo thermal_throttling || echo power_capping)
	mhz=$([ $kind = thermal ] && echo 1110 || echo 1350)
	python3 - "$D/$kind.json" "$want" "$mhz" <<'PY' || fail "$kind"
import json, sys
d = json.load(open(sys.argv[1]))
want, mhz = sys.argv[2], int(sys.argv[3])
c = d["chains"][0] if d["chains"] else None
assert c and c["root_cause"]["kind"] == want, [x["root_cause"] for x in d["chains"]]
ev = c["evidence"]
assert ev["device"] == 0 and ev["sm_clock_throttled_mhz"] == mhz and ev["sm_clock_base_mhz"] == 1980, ev
assert c["op"] == "cudaStreamSynchronize" and c["comm"] == "fake_workload" and c["explained_share"] >= 0.5, c
assert "00000000:3B:00.0" in c["root_cause"]["summary"], c["root_cause"]["summary"]
others = {x["root_cause"]["kind"] for x in d["chains"]} & {"thermal_throttling", "power_capping"} - {want}
assert not others, others
print(f"ok {want}: {c['root_cause']['summary'][:160]}")
PY
done

# memory, with an Xid from NVML only
setctl ''
CW_FAKE_MALLOC_US=0 trace memory -T 5 -m mix -r 2000
episode 1 "mem_pct=96\nCW_FAKE_MALLOC_US=4000\nCW_FAKE_MALLOC_FAIL=1\nxid=48@1\n" 1.5
finish memory
python3 - "$D/memory.json" <<'PY' || fail memory
import json, sys
d = json.load(open(sys.argv[1]))
by = {(c["root_cause"]["kind"], c["op"]): c for c in d["chains"]}
# Other chains may come from the shared machine's load; this one must be there.
c = by.get(("gpu_memory_pressure", "cudaMalloc"))
assert c, list(by)
assert not {"thermal_throttling", "power_capping"} & {k for k, _ in by}, list(by)
ev = c["evidence"]
assert c["op"] == "cudaMalloc" and ev["device"] == 0 and ev["failed_allocations"] > 0 and ev["mem_used_pct"] > 90, ev
x = by.get(("xid_fault", "xid"))
assert x, list(by)
xe = x["evidence"]
assert xe["xid"] == 48 and xe["device"] == 0 and x["severity"] == "HIGH", xe
# No pid in an NVML event: the busiest process on the device is named.
assert x["comm"] == "fake_workload" and "busiest" in x["root_cause"]["summary"], x["root_cause"]["summary"]
print("ok gpu_memory_pressure + NVML xid_fault:", c["root_cause"]["summary"][:120])
PY
[ "$(sqlite3 "$D/memory.db" "SELECT count(*) FROM events WHERE op = 'xid' AND detail LIKE '%\"from\":\"nvml\"%'")" = 1 ] ||
	fail "memory: NVML Xid not stored once"

# xid from the kernel log
setctl ''
trace xid -T 6 -m sync
wp=$(sqlite3 "$D/xid.db" "SELECT pid FROM events WHERE source = 'cuda' LIMIT 1")
[ -n "$wp" ] || fail "xid: no workload process"
sleep 1
# NVML reports the fault first; its event waits so that the kernel log's
# line, which names the process, is the one stored.
setctl 'xid=79@1\n'
sleep 0.5
line="NVRM: Xid (PCI:0000:3b:00): 79, pid=$wp, name=$MARK, GPU has fallen off the bus."
echo "$line" >/dev/kmsg
echo "$line" >/dev/kmsg
echo "NVRM: Xid (PCI:0000:3b:00): 99999, pid=$wp, name=$MARK, out of range" >/dev/kmsg
finish xid
q=$(sqlite3 "$D/xid.db" "SELECT (SELECT count(*) FROM events WHERE op = 'xid'),
	(SELECT count(*) FROM events WHERE op = 'xid' AND source = 'gpu' AND pid = $wp AND comm = '$MARK' AND arg0 = 79 AND device = 0),
	(SELECT value FROM counters WHERE name = 'trace.gpu.xid_duplicates'),
	(SELECT value FROM counters WHERE name = 'trace.gpu.kmsg_rejected')")
IFS='|' read -r nx nmine ndup nrej <<<"$q"
[ "$nx" = 1 ] && [ "$nmine" = 1 ] && [ "$ndup" -ge 2 ] && [ "$nrej" -ge 1 ] || fail "xid: stored $q (xid, mine, dup, rejected)"
python3 - "$D/xid.json" "$wp" <<'PY' || fail xid
import json, sys
d = json.load(open(sys.argv[1]))
wp = int(sys.argv[2])
c = d["chains"][0]
ev = c["evidence"]
assert c["root_cause"]["kind"] == "xid_fault" and c["pid"] == wp and c["severity"] == "HIGH", c
assert ev["xid"] == 79 and ev["device"] == 0 and ev["fault_pid"] == wp, ev
s = c["root_cause"]["summary"]
assert "Xid 79 on 0000:3b:00" in s and "fallen off the bus" in s and "last CUDA call cudaStreamSynchronize" in s, s
assert any("drain the node" in f for f in c["fix"]), c["fix"]
print("ok xid_fault:", s)
PY
grep -q "warning: Xid 79 on GPU 0000:3b:00 (critical)" "$D/err" || fail "xid: no live warning"
echo "ok"
