#!/bin/bash
# The dashboard in Debian's headless Chromium, driven by puppeteer-core
# (tests/browser, pinned in package-lock.json): on the incident, healthy,
# io-contention and empty demo databases, one with inference requests, an unreadable file, a server that
# goes away, a mutual-TLS server and a fleet of four loopback agents, the
# page shows what explain --json and query --json say; see
# tests/browser/dashboard.mjs. Screenshots land in $CW_BUILD/screenshots.
. "$CW_ROOT/tests/integration/fleet_lib.sh"
"$CW_ROOT/scripts/install-browser-tests.sh"
rc=$?
[ $rc = 77 ] && { echo "skip: node, npm or chromium not installed"; exit 77; }
[ $rc = 0 ] || fail "npm ci in tests/browser failed"
ensure_fixture
mkcerts
for s in incident healthy io-contention nccl-straggler thermal-throttling noisy-neighbour; do
	"$CW_BIN" demo "$s" --db "$T/$s.db" >/dev/null 2>&1 || fail "demo $s"
done
# Inference requests (with markup in two paths) added to the incident.
cp "$T/incident.db" "$T/requests.db" && python3 "$CW_ROOT/tests/fixtures/requests_db.py" "$T/requests.db" >/dev/null ||
	fail "requests database"
# Two nodes in one file: the incident on n-b, thermal throttling on n-a.
"$CW_BIN" merge "$T/thermal-throttling.db" --force-node n-a "$T/incident.db" --force-node n-b -o "$T/merged.db" \
	>/dev/null || fail "merge"
# An empty database: the schema of a real one, every row deleted.
cp "$T/healthy.db" "$T/empty.db"
sqlite3 "$T/empty.db" "$(sqlite3 "$T/empty.db" "SELECT group_concat('DELETE FROM \"' || name || '\"', ';') FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")" ||
	fail "emptying the database"
[ "$(sqlite3 "$T/empty.db" 'SELECT count(*) FROM events')" = 0 ] || fail "empty.db not empty"

# Four agents (mTLS), gpu-3 with a preempted trainer; the dashboard's
# server fans out to them through its config's fleet section.
NODES=""
for i in 1 2 3 4; do
	extra=
	[ $i = 3 ] && extra=preempted
	"$AGENT_DB" "$T/gpu-$i.db" "gpu-$i" $((i - 1)) $extra || fail "fixture db $i"
	start_agent "gpu-$i" "$T/gpu-$i.db" --cert "$PKI/server.crt" --key "$PKI/server.key" --client-ca "$PKI/ca.crt"
	NODES="$NODES    - 127.0.0.1:$PORT
"
done
cat >"$T/fleet.yaml" <<YAML
fleet:
  nodes:
$NODES  ca_cert: $PKI/ca.crt
  client_cert: $PKI/client.crt
  client_key: $PKI/client.key
  timeout: 5s
YAML

# A live trace (root: BPF) of the fake-CUDA workload, served as it is
# written: the page must update by itself.
LIVE=
FAKE=$CW_BUILD/fixtures/fakecuda/libcudart.so.13
if [ "$(id -u)" = 0 ] && [ -f "$FAKE" ]; then
	LD_LIBRARY_PATH=$CW_BUILD/fixtures/fakecuda CW_FAKE_SYNC_US=200 "$CW_BIN" --node live-node trace \
		--db "$T/live.db" --no-view --serve 127.0.0.1:0 --cuda-lib "$FAKE" -- \
		"$CW_BUILD/fixtures/fake_workload" -T 30 -m sync >"$T/w.out" 2>"$T/t.err" &
	PIDS+=("$!")
	for _ in $(seq 1 100); do
		[ -f "$T/t.err" ] && LIVE=$(sed -n 's/.*serving \(https:\/\/127\.0\.0\.1:[0-9]*\).*/\1/p' "$T/t.err")
		[ -n "$LIVE" ] && break
		sleep 0.1
	done
	[ -n "$LIVE" ] || fail "trace --serve did not start: $(cat "$T/t.err")"
else
	echo "no live trace: needs root and the fake CUDA fixture"
fi

rm -rf "$CW_BUILD/screenshots"
cd "$CW_ROOT/tests/browser" || fail "no tests/browser"
CW_LIVE_URL=$LIVE CW_DASH_DIR=$T CW_SHOTS=$CW_BUILD/screenshots CW_BIN=$CW_BIN timeout 120 node dashboard.mjs ||
	fail "dashboard checks failed (screenshots in $CW_BUILD/screenshots)"
