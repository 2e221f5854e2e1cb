#!/bin/bash
# Plain HTTP is an explicit choice: an agent started with serve --no-tls is
# reached as http://HOST:PORT from --nodes and from the config's
# fleet.nodes; given as a bare HOST:PORT (TLS), the warning says it
# answers plain HTTP and how to name it, not OpenSSL's "wrong version
# number" alone.
set -u
. "$CW_ROOT/tests/lib/plain_agents.sh"

"$CW_BIN" --node plain1 demo gpu-steal --db "$tmp/a.db" > /dev/null || fail "demo"
plain_agent "$tmp/a.db" --node plain1
port=$PORT

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
