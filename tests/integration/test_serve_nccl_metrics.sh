#!/bin/bash
# /metrics carries the NCCL arrival analysis per rank: collectives, late
# arrivals and their lag, the last sequence number, and the rank a hang
# waits for (the nccl-hang and nccl-straggler demo databases).
. "$CW_ROOT/tests/integration/fleet_lib.sh"

"$CW_BIN" demo nccl-hang --db "$T/h.db" >/dev/null || fail "demo nccl-hang"
"$CW_BIN" demo nccl-straggler --db "$T/s.db" >/dev/null || fail "demo nccl-straggler"
# start_agent runs here, not in a command substitution (whose exit would
# run the cleanup trap).
metrics() { # DB: /metrics text into $m
	start_agent "$1" "$T/$1.db"
	m=$(curl -s "${AUTH[@]}" --max-time 10 --cacert "$HOME/.causeway/tls/server.crt" "https://127.0.0.1:$PORT/metrics")
}
metrics h
echo "$m" | grep -q '^# TYPE causeway_nccl_hang_missing gauge$' || fail "no hang series: $m"
echo "$m" | grep -Eq '^causeway_nccl_hang_missing\{node="demo-node",pid="4851",rank="3"\} 1$' || fail "rank 3 not missing: $(echo "$m" | grep nccl)"
[ "$(echo "$m" | grep -c '^causeway_nccl_hang_missing{.*} 0$')" = 3 ] || fail "others: $(echo "$m" | grep hang_missing)"
echo "$m" | grep -Eq '^causeway_nccl_last_seq\{node="demo-node",pid="4821",rank="0"\} 40$' || fail "last seq"
echo "$m" | grep -Eq '^causeway_nccl_last_seq\{node="demo-node",pid="4851",rank="3"\} 39$' || fail "missing rank's seq"
metrics s
echo "$m" | grep -Eq '^causeway_nccl_late_collectives\{node="demo-node",pid="4841",rank="2"\} 60$' || fail "straggler late: $(echo "$m" | grep nccl)"
echo "$m" | grep -Eq '^causeway_nccl_arrival_lag_seconds\{node="demo-node",pid="4841",rank="2"\} 1\.[0-9]+$' || fail "straggler lag"
echo "$m" | grep -Eq '^causeway_nccl_collectives\{node="demo-node",pid="4821",rank="0"\} 60$' || fail "collectives"
if command -v promtool >/dev/null; then
	# The NCCL series (other series have their own test).
	echo "$m" | grep -E '^(# (HELP|TYPE) )?causeway_nccl_' | promtool check metrics ||
		fail "promtool rejects the NCCL series"
fi
echo ok
