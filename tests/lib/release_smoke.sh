#!/bin/bash
# release_smoke.sh DIR [serve] [check]: runs inside a minimal Debian root
# (chroot; tests/lib/release_root.sh puts it there): the release file
# DIR/causeway runs version, check, demo, explain, query, export and, with
# "serve", serves the demo store and asks it with its own HTTPS client and
# the token serve generated (and is refused without it). With "check",
# check must also say trace can run. Prints "FAIL: ..." and exits 1 on the
# first failure.
set -u
D=$1
shift
want_serve=0 want_check=0
for a in "$@"; do
	case $a in serve) want_serve=1 ;; check) want_check=1 ;; esac
done
B=$D/causeway
export HOME=$D/home
mkdir -p "$HOME"
fail() { echo "FAIL: $*"; exit 1; }

"$B" version >"$D/version.out" 2>&1 || fail "version: $(cat "$D/version.out")"
grep -q '^causeway ' "$D/version.out" || fail "version: $(cat "$D/version.out")"
"$B" check >"$D/check.out" 2>&1
rc=$?
grep -q '^kernel\|^bpf\|^btf\|trace can' "$D/check.out" || fail "check printed no report (rc $rc): $(cat "$D/check.out")"
if [ $want_check = 1 ]; then
	[ $rc = 0 ] && grep -q 'trace can run here' "$D/check.out" || fail "check (rc $rc): $(cat "$D/check.out")"
fi
"$B" demo --db "$D/d.db" >"$D/demo.out" 2>&1 || fail "demo: $(cat "$D/demo.out")"
grep -q 'wrote [0-9]* events' "$D/demo.out" || fail "demo: $(cat "$D/demo.out")"
"$B" explain --db "$D/d.db" >"$D/explain.out" 2>&1 || fail "explain: $(cat "$D/explain.out")"
grep -q 'causal chain' "$D/explain.out" || fail "explain: $(cat "$D/explain.out")"
n=$("$B" query --db "$D/d.db" --csv "SELECT count(*) AS n FROM events" 2>&1 | tail -n 1)
n=${n%$'\r'}
[ "$n" -gt 1000 ] 2>/dev/null || fail "query: '$n'"
"$B" export --db "$D/d.db" -o "$D/trace.json" >"$D/export.out" 2>&1 || fail "export: $(cat "$D/export.out")"
[ "$(head -c 1 "$D/trace.json")" = "{" ] && grep -q '"traceEvents"' "$D/trace.json" || fail "export: not trace JSON"

if [ $want_serve = 1 ]; then
	"$B" --node rel serve --db "$D/d.db" --listen 127.0.0.1:0 2>"$D/serve.log" &
	pid=$!
	port=
	for _ in $(seq 1 100); do
		port=$(sed -n 's/.*serving https:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$D/serve.log")
		[ -n "$port" ] && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.1
	done
	[ -n "$port" ] || { kill $pid 2>/dev/null; fail "serve did not start: $(cat "$D/serve.log")"; }
	# The client sends ~/.causeway/token, the token serve generated. The
	# deadline is generous: under qemu-user the TLS handshake is emulated.
	out=$("$B" query --node-timeout 30s --nodes "127.0.0.1:$port" --ca-cert "$HOME/.causeway/tls/server.crt" --csv \
		"SELECT count(*) AS n FROM events" 2>&1)
	echo "$out" | tr -d '\r' | grep -qx "rel,$n" || { kill $pid; fail "query through serve: $out"; }
	out=$(CW_TOKEN=wrong "$B" query --node-timeout 30s --nodes "127.0.0.1:$port" --ca-cert "$HOME/.causeway/tls/server.crt" \
		--csv "SELECT count(*) AS n FROM events" 2>&1)
	echo "$out" | grep -q "401" || { kill $pid; fail "a wrong token was not refused: $out"; }
	kill $pid
	wait $pid 2>/dev/null
fi
echo "release smoke: ok"
