#!/bin/bash
# Fleet readers beside agents that answer badly: one answers HTTP 503 with
# an error of its own, one a JSON body cut short. export, explain and query
# --nodes name each bad agent with its own reason and still give the good
# agent's data (export: every one of its calls). On a terminal the fleet
# readers show one updating progress line (fetched rows, then the trace's
# size), cleared before each warning and at the end; nothing with --json or
# when stderr is not a terminal.
. "$CW_ROOT/tests/lib/plain_agents.sh"
command -v script >/dev/null || { echo "util-linux script not installed"; exit 77; }

"$CW_BIN" --node node-a demo incident --db "$tmp/a.db" > /dev/null || fail "demo"
plain_agent "$tmp/a.db" --node node-a
good=$ADDR
bad_agent() { # MODE: sets ADDR
	python3 "$CW_ROOT/tests/fixtures/bad_agent.py" "$1" "$tmp/$1.port" &
	pids+=($!)
	for _ in $(seq 1 100); do [ -s "$tmp/$1.port" ] && break; sleep 0.05; done
	[ -s "$tmp/$1.port" ] || fail "bad agent $1 did not start"
	ADDR=http://127.0.0.1:$(cat "$tmp/$1.port")
}
bad_agent error
err=$ADDR
bad_agent malformed
mal=$ADDR
nodes=$good,$err,$mal
msg='store busy: checkpoint of agent-x7 in progress'
names_both() { # FILE WHAT
	grep -qF "node \"$err\": HTTP 503: $msg" "$1" || fail "$2 does not name the 503 agent with its message: $(cat -v "$1")"
	grep -qF "node \"$mal\": answer is not a causeway JSON object" "$1" ||
		fail "$2 does not name the agent with the cut body: $(cat -v "$1")"
}

# export: the good agent's every call, both bad agents named.
"$CW_BIN" export --nodes "$nodes" --node-timeout 10s -o "$tmp/f.json" 2> "$tmp/e" || fail "export: $(cat "$tmp/e")"
names_both "$tmp/e" "export"
want=$(sqlite3 "$tmp/a.db" "SELECT count(*) FROM events WHERE source IN ('cuda', 'driver')")
got=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(sum(1 for e in d["traceEvents"] if e.get("ph") == "X" and e.get("cat") in ("cuda", "driver")))' "$tmp/f.json")
[ "$got" = "$want" ] || fail "export holds $got CUDA calls of node-a's $want"
[ "$(grep -c "HTTP 503" "$tmp/e")" = 1 ] || fail "the 503 agent named more than once: $(cat "$tmp/e")"
grep -q $'\r' "$tmp/e" && fail "progress on a non-terminal stderr"

# explain: node-a's chains, both bad agents among the warnings.
"$CW_BIN" explain --nodes "$nodes" --json > "$tmp/x.json" 2> "$tmp/e" || fail "explain: $(cat "$tmp/e")"
python3 - "$tmp/x.json" "$err" "$mal" "$msg" <<'PY' || fail "explain --json: $(head -c 600 "$tmp/x.json")"
import json, sys
d = json.load(open(sys.argv[1]))
err, mal, msg = sys.argv[2:5]
assert d["chains"] and {c["node"] for c in d["chains"]} == {"node-a"}, [c["node"] for c in d["chains"]]
w = " | ".join(d["warnings"])
assert f'node "{err}": HTTP 503: {msg}' in w, w
assert f'node "{mal}": answer is not a causeway JSON object' in w, w
PY
"$CW_BIN" explain --nodes "$nodes" > "$tmp/x.txt" 2> "$tmp/e" || fail "explain text: $(cat "$tmp/e")"
names_both "$tmp/e" "explain"
grep -q "node-a" "$tmp/x.txt" || fail "text explain without node-a's chains: $(head -c 400 "$tmp/x.txt")"

# query: node-a's rows only, both bad agents named.
"$CW_BIN" query --nodes "$nodes" --csv "SELECT count(*) AS n FROM events" > "$tmp/q.csv" 2> "$tmp/e" ||
	fail "query: $(cat "$tmp/e")"
tr -d '\r' < "$tmp/q.csv" > "$tmp/q"
names_both "$tmp/e" "query"
grep -q "^node-a,$(sqlite3 "$tmp/a.db" 'SELECT count(*) FROM events')\$" "$tmp/q" || fail "query rows: $(cat "$tmp/q")"
[ "$(grep -c . "$tmp/q")" = 2 ] || fail "query rows besides node-a's: $(cat "$tmp/q")"

# Progress on a terminal (script(1)'s pseudo-terminal), shown at once.
tty() { CW_PROGRESS_AFTER_MS=0 script -qec "$1" /dev/null > "$tmp/tty" 2>&1 < /dev/null; }
clear=$'\r\e[K'
tty "'$CW_BIN' export --nodes '$nodes' --node-timeout 10s -o '$tmp/t.json'"
grep -aq "causeway: export: fetching the agents' rows \.\.\. [0-9.]* s, [1-9][0-9]* rows" "$tmp/tty" ||
	fail "fleet export showed no fetch progress: $(cat -v "$tmp/tty" | head -c 400)"
grep -aq "causeway: export: writing the trace \.\.\. [0-9.]* s, [0-9.]* MiB written" "$tmp/tty" ||
	fail "fleet export showed no write progress: $(cat -v "$tmp/tty" | tail -c 400)"
grep -aqF "${clear}causeway: warning: export: node \"$err\": HTTP 503" "$tmp/tty" ||
	fail "warning not on a cleared line: $(cat -v "$tmp/tty" | head -c 600)"
grep -aqF "${clear}causeway: export: wrote" "$tmp/tty" || fail "progress not cleared at the end: $(cat -v "$tmp/tty" | tail -c 300)"
tty "'$CW_BIN' explain --nodes '$nodes'"
grep -aq "causeway: explain: asking the agents \.\.\. " "$tmp/tty" || fail "fleet explain showed no progress"
tty "'$CW_BIN' query --nodes '$nodes' 'SELECT 1'"
grep -aq "causeway: query: asking the agents \.\.\. " "$tmp/tty" || fail "fleet query showed no progress"
tty "'$CW_BIN' explain --nodes '$nodes' --json"
grep -aq "asking the agents" "$tmp/tty" && fail "fleet explain --json showed progress"
tty "'$CW_BIN' export --nodes '$nodes' --json -o '$tmp/t2.json'"
grep -aq "fetching the agents" "$tmp/tty" && fail "fleet export --json showed progress"
echo "ok: $got calls of node-a"
