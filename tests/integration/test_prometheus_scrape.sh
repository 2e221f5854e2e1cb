#!/bin/bash
# A real Prometheus scrapes `trace --serve` over mutual TLS while a Python
# process calls the fake libcudart 300 times and then stops calling (alive,
# sleeping): the live /metrics passes promtool, PromQL sees the calls under
# the process's name with the exact count, and the stall gauge of that pid
# grows while it makes no CUDA call.
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
. "$CW_ROOT/tests/integration/fleet_lib.sh"
command -v prometheus >/dev/null || fail "prometheus not installed (scripts/install-deps.sh)"
command -v promtool >/dev/null || fail "promtool not installed (scripts/install-deps.sh)"
mkcerts
FAKE=$CW_BUILD/fixtures/fakecuda/libcudart.so.13
[ -f "$FAKE" ] || fail "fixture $FAKE missing (make fixtures)"
cat >"$T/cw.yaml" <<YAML
node: prom-node
server:
  tls:
    cert: $PKI/server.crt
    key: $PKI/server.key
    client_ca: $PKI/ca.crt
YAML
# 300 calls, a marker line, then up to 60 s without any CUDA call (the test
# ends it once its checks are done).
cat >"$T/w.py" <<'PY'
import ctypes, sys, time
lib = ctypes.CDLL(sys.argv[1])
for _ in range(300):
    lib.cudaStreamSynchronize(ctypes.c_void_p(0))
print("idle", flush=True)
time.sleep(60)
PY
CW_FAKE_SYNC_US=100 "$CW_BIN" --config "$T/cw.yaml" trace --db "$T/t.db" --no-view --bpf-stats \
	--serve 127.0.0.1:0 --cuda-lib "$FAKE" -- python3 "$T/w.py" "$FAKE" >"$T/w.out" 2>"$T/t.err" &
TP=$!
PIDS+=("$TP")
PORT=
for _ in $(seq 1 100); do
	PORT=$(sed -n 's/.*serving https:\/\/127\.0\.0\.1:\([0-9]*\) for node "prom-node".*/\1/p' "$T/t.err")
	[ -n "$PORT" ] && break
	kill -0 $TP 2>/dev/null || break
	sleep 0.1
done
[ -n "$PORT" ] || fail "trace did not start serving: $(cat "$T/t.err")"
TLS=(--cacert "$PKI/ca.crt" --cert "$PKI/client.crt" --key "$PKI/client.key")
for _ in $(seq 1 100); do
	grep -q idle "$T/w.out" && break
	sleep 0.1
done
grep -q idle "$T/w.out" || fail "workload did not reach its idle phase: $(cat "$T/w.out" "$T/t.err")"
WPID=$(pgrep -f "$T/w.py" | grep -v "^$TP$" | tail -1)

curl -s --max-time 5 "${TLS[@]}" "https://127.0.0.1:$PORT/metrics" >"$T/m.txt" || fail "scrape with curl"
promtool check metrics <"$T/m.txt" || fail "promtool rejects the live /metrics: $(cat "$T/m.txt")"
for fam in $(sed -n 's/^# TYPE \([^ ]*\) .*/\1/p' "$T/m.txt"); do
	grep -q "\`$fam\`" "$CW_ROOT/docs/metrics.md" || fail "live family $fam is not documented in docs/metrics.md"
done
# --bpf-stats: the agent's own programs ran, and their time was counted.
python3 - "$T/m.txt" <<'PY' || fail "BPF program statistics"
import re, sys
t = open(sys.argv[1]).read()
runs = {m[0]: int(m[1]) for m in re.findall(r'^causeway_bpf_program_runs_total\{node="prom-node",program="([^"]+)"\} (\d+)$', t, re.M)}
secs = {m[0]: float(m[1]) for m in re.findall(r'^causeway_bpf_program_run_seconds_total\{node="prom-node",program="([^"]+)"\} (\S+)$', t, re.M)}
busy = [p for p, n in runs.items() if n >= 300]
print("programs:", len(runs), "ran >= 300 times:", busy)
if not busy or not all(secs[p] > 0 for p in busy):
    sys.exit("FAIL: no program counted 300 runs with run time: %r %r" % (runs, secs))
PY
grep -q "^causeway_process_cuda_idle_seconds{node=\"prom-node\",pid=\"$WPID\",process=\"python3\"}" "$T/m.txt" ||
	fail "no stall gauge for pid $WPID: $(grep idle "$T/m.txt")"

PP=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$T/prom.yml" <<YAML
global:
  scrape_interval: 3s
  scrape_timeout: 3s
scrape_configs:
  - job_name: causeway
    scheme: https
    tls_config:
      ca_file: $PKI/ca.crt
      cert_file: $PKI/client.crt
      key_file: $PKI/client.key
      server_name: localhost
    static_configs:
      - targets: ["127.0.0.1:$PORT"]
YAML
promtool check config "$T/prom.yml" >/dev/null || fail "promtool rejects the scrape config"
prometheus --config.file="$T/prom.yml" --storage.tsdb.path="$T/tsdb" \
	--web.listen-address="127.0.0.1:$PP" >"$T/prom.log" 2>&1 &
PIDS+=($!)
q() { curl -s --max-time 5 -G "http://127.0.0.1:$PP/api/v1/query" --data-urlencode "query=$1"; }
val() { python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'; }
calls= up=
t0=$SECONDS
for _ in $(seq 1 600); do
	up=$(q 'up{job="causeway"}' 2>/dev/null | val 2>/dev/null)
	calls=$(q 'sum(causeway_op_duration_seconds_count{process="python3",op="cudaStreamSynchronize"})' 2>/dev/null | val 2>/dev/null)
	[ "$up" = 1 ] && [ -n "$calls" ] && break
	[ $((SECONDS - t0)) -gt 50 ] && break
	sleep 0.2
done
echo "waited $((SECONDS - t0)) s for the scrape"
echo "up=$up calls=$calls"
[ "$up" = 1 ] || curl -s "http://127.0.0.1:$PP/api/v1/targets" | python3 -c 'import json,sys; [print("target:", t["health"], t["lastError"]) for t in json.load(sys.stdin)["data"]["activeTargets"]]' 
if [ "$up" != 1 ]; then
	kill -0 "$WPID" 2>/dev/null || { wait "$TP"; echo "the workload ended early: trace exit $?, $(cat "$T/w.out")"; }
	fail "Prometheus did not scrape causeway over mTLS: $(tail -3 "$T/prom.log"; grep -v 'no Python stacks' "$T/t.err")"
fi
[ "$calls" = 300 ] || fail "PromQL counted $calls cudaStreamSynchronize calls, want 300: $(grep 'duration_seconds_count.*cudaStreamSynchronize' "$T/m.txt")"
idle=$(q "causeway_process_cuda_idle_seconds{pid=\"$WPID\"}" | val)
echo "stall gauge: $idle s"
python3 -c "import sys; sys.exit(0 if float('$idle') > 0.5 else 1)" ||
	fail "stall gauge $idle does not grow while the process makes no call"
# Every scrape passed the gate.
errs=$(q 'causeway_http_rejected_total{job="causeway"}' | val)
[ "$errs" = 0 ] || fail "the gate rejected ${errs:-?} scrapes"
kill "$WPID"
wait $TP
# Every call: a row, or folded in the kernel (summary capture, the default).
n=$(sqlite3 "$T/t.db" "SELECT (SELECT count(*) FROM events WHERE op='cudaStreamSynchronize')
	+ (SELECT coalesce(sum(count), 0) FROM folded WHERE op='cudaStreamSynchronize')")
[ "$n" = 300 ] || fail "the store holds $n calls, want 300"
echo ok
