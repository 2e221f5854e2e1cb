#!/bin/bash
# export --nodes holds every call: two agents on loopback (plain HTTP) each
# serving the demo's incident database (41,706 cudaLaunchKernel calls, more
# than an agent's 10,000-row answer cap) give a trace with every call of
# both, as the export of each file alone does; with no agent answering the
# error carries each agent's own message.
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

addrs=()
for n in a b; do
	"$CW_BIN" --node "node-$n" demo incident --db "$tmp/$n.db" > /dev/null || fail "demo $n"
	"$CW_BIN" --node "node-$n" serve --db "$tmp/$n.db" --listen 127.0.0.1:0 --no-tls 2> "$tmp/$n.log" &
	pids+=($!)
	port=
	for _ in $(seq 1 100); do
		port=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/$n.log")
		[ -n "$port" ] && break
		sleep 0.05
	done
	[ -n "$port" ] || { cat "$tmp/$n.log"; fail "agent $n did not start"; }
	addrs+=("http://127.0.0.1:$port")
done
nodes=$(IFS=,; echo "${addrs[*]}")
want=$(( $(sqlite3 "$tmp/a.db" "SELECT count(*) FROM events WHERE op = 'cudaLaunchKernel'") +
	 $(sqlite3 "$tmp/b.db" "SELECT count(*) FROM events WHERE op = 'cudaLaunchKernel'") ))
[ "$want" -gt 20000 ] || fail "the demo databases hold only $want launches"

"$CW_BIN" export --nodes "$nodes" --node-timeout 10s -o "$tmp/f.json" 2> "$tmp/e" || fail "fleet export: $(cat "$tmp/e")"
got=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(sum(1 for e in d["traceEvents"] if e.get("ph") == "X" and e.get("name") == "cudaLaunchKernel"))' "$tmp/f.json")
[ "$got" = "$want" ] || fail "fleet export holds $got cudaLaunchKernel slices, the agents $want"

# Nobody answers: each agent's own reason, never an empty message.
for p in "${pids[@]}"; do kill "$p"; wait "$p" 2>/dev/null; done
pids=()
"$CW_BIN" export --nodes "$nodes" --node-timeout 2s -o "$tmp/g.json" 2> "$tmp/e" && fail "export with no agent: exit 0"
grep -q 'none of the 2 nodes answered: node "http://127.0.0.1:[0-9]*": .*; node "http://127.0.0.1:[0-9]*": ' "$tmp/e" ||
	fail "no-agent error: $(cat "$tmp/e")"
grep -q 'export: *$' "$tmp/e" && fail "an error without its cause: $(cat "$tmp/e")"
echo "ok: $got launches"
