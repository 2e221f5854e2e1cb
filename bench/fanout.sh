#!/bin/bash
# fanout.sh BUILD [RUNS]: fleet fan-out latency. Starts 4, then 50 agents
# on loopback (TLS 1.3 with a generated certificate, one agent_db database
# each) and times `causeway query --nodes ...` end to end (process start,
# parallel TLS handshakes, the query on every node, the clock-skew samples,
# merge, print), RUNS times each. Prints the median and worst run; targets:
# 4 agents <= 100 ms, 50 agents <= 1 s (issue 5).
set -eu
BUILD=${1:-build}
RUNS=${2:-11}
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=$ROOT/$BUILD/causeway
FIX=$ROOT/$BUILD/fixtures/agent_db
[ -x "$FIX" ] || make -s -C tests/fixtures BUILD="$ROOT/$BUILD/fixtures" "$FIX" >/dev/null
T=$(mktemp -d /tmp/cw-fanout-bench.XXXXXX)
export HOME=$T
. "$(cd "$(dirname "$0")/.." && pwd)/tests/lib/auth.sh"
auth_shared # every server here and its clients share $CW_TOKEN
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$T"' EXIT

"$FIX" "$T/agent.db" bench-node 0 preempted

start_agents() { # N: sets ADDRS
	local n=$1 i port
	ADDRS=()
	for i in $(seq 1 "$n"); do
		cp "$T/agent.db" "$T/a$i.db"
		"$BIN" --node "agent-$i" serve --db "$T/a$i.db" --listen 127.0.0.1:0 2>"$T/a$i.log" &
		PIDS+=($!)
	done
	for i in $(seq 1 "$n"); do
		port=
		for _ in $(seq 1 200); do
			port=$(sed -n 's/.*serving https:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/a$i.log" 2>/dev/null)
			[ -n "$port" ] && break
			sleep 0.05
		done
		[ -n "$port" ] || { cat "$T/a$i.log"; exit 1; }
		ADDRS+=("127.0.0.1:$port")
	done
}

stop_agents() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null || true
	PIDS=()
}

measure() { # N
	local n=$1 nodes ms=() t0 t1 out rows
	start_agents "$n"
	nodes=$(IFS=,; echo "${ADDRS[*]}")
	"$BIN" query --nodes "$nodes" --ca-cert "$HOME/.causeway/tls/server.crt" \
		"SELECT 1" >/dev/null # warm the page cache
	for _ in $(seq 1 "$RUNS"); do
		t0=$(date +%s%N)
		out=$("$BIN" query --nodes "$nodes" --ca-cert "$HOME/.causeway/tls/server.crt" \
			--node-timeout 5s "SELECT count(*) AS n FROM events")
		t1=$(date +%s%N)
		rows=$(echo "$out" | grep -c '^agent-')
		[ "$rows" = "$n" ] || { echo "only $rows of $n agents answered"; exit 1; }
		ms+=($(((t1 - t0) / 1000)))
	done
	stop_agents
	printf '%s\n' "${ms[@]}" | sort -n | awk -v n="$n" -v runs="$RUNS" '
		{ v[NR] = $1 }
		END { printf "fan-out query over %2d agents: median %.1f ms, worst %.1f ms (%d runs)\n",
			n, v[int((NR + 1) / 2)] / 1000, v[NR] / 1000, runs }'
}

echo "host: $(nproc) CPUs, $(uname -r); agents and client share the host"
measure 4
measure 50
