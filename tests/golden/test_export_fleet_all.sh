#!/bin/bash
# export --nodes holds every call: two agents on loopback (plain HTTP) each
# serving the demo's incident database (41,706 cudaLaunchKernel calls, more
# than an agent's 10,000-row answer cap) give a trace with every call of
# both, as the export of each file alone does; with no agent answering the
# error carries each agent's own message.
. "$CW_ROOT/tests/lib/plain_agents.sh"

addrs=()
for n in a b; do
	"$CW_BIN" --node "node-$n" demo incident --db "$tmp/$n.db" > /dev/null || fail "demo $n"
	plain_agent "$tmp/$n.db" --node "node-$n"
	addrs+=("$ADDR")
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
