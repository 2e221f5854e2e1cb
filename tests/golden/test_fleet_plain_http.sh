#!/bin/bash
# Plain HTTP is an explicit choice: an agent started with serve --no-tls is
# reached as http://HOST:PORT from --nodes and from the config's
# fleet.nodes; given as a bare HOST:PORT (TLS), the warning says it
# answers plain HTTP and how to name it, not OpenSSL's "wrong version
# number" alone.
set -u
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
. "$CW_ROOT/tests/lib/auth.sh"
auth_shared

"$CW_BIN" --node plain1 demo gpu-steal --db "$tmp/a.db" > /dev/null || fail "demo"
"$CW_BIN" --node plain1 serve --db "$tmp/a.db" --listen 127.0.0.1:0 --no-tls 2> "$tmp/a.log" &
pids+=($!)
port=
for _ in $(seq 1 100); do
	port=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/a.log")
	[ -n "$port" ] && break
	sleep 0.05
done
[ -n "$port" ] || { cat "$tmp/a.log"; fail "agent did not start"; }

"$CW_BIN" query --nodes "http://127.0.0.1:$port" "SELECT count(*) AS n FROM events" > "$tmp/o" 2> "$tmp/e" ||
	fail "--nodes http://: $(cat "$tmp/e")"
grep -q plain1 "$tmp/o" || fail "--nodes http:// answer: $(cat "$tmp/o")"

"$CW_BIN" query --nodes "127.0.0.1:$port" "SELECT 1" > /dev/null 2> "$tmp/e" && fail "TLS to a plain agent: exit 0"
grep -q "node \"127.0.0.1:$port\": answers plain HTTP, not TLS (.*); if it runs serve --no-tls, give it as http://127.0.0.1:$port" "$tmp/e" ||
	fail "bare HOST:PORT against plain HTTP: $(cat "$tmp/e")"

printf 'fleet:\n  nodes:\n    - http://127.0.0.1:%s\n' "$port" > "$tmp/c.yaml"
"$CW_BIN" --config "$tmp/c.yaml" explain --fleet --json > "$tmp/x.json" 2> "$tmp/e" ||
	fail "fleet.nodes http://: $(cat "$tmp/e")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["chains"] and all(n["ok"] for n in d["nodes"]) else 1)' \
	"$tmp/x.json" || fail "explain --fleet over http://: $(head -c 400 "$tmp/x.json")"
printf 'fleet:\n  nodes:\n    - ftp://127.0.0.1:1\n' > "$tmp/bad.yaml"
"$CW_BIN" --config "$tmp/bad.yaml" explain --fleet > /dev/null 2> "$tmp/e" && fail "ftp:// node accepted"
grep -q 'bad address "ftp://127.0.0.1:1"' "$tmp/e" || fail "bad scheme: $(cat "$tmp/e")"
echo ok
