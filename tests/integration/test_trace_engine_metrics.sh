#!/bin/bash
# trace --inference auto asks each engine it follows for its own /metrics
# once a second (docs/inference.md, "The engine's own numbers"): with the
# real llama-server (Debian's llama.cpp, tests/lib/llama_server.sh) the
# figures it has (queue depth and running requests; this build has no
# KV-cache series) are in engine_metrics under its pid and port while
# completions run, and `causeway serve` shows them on /metrics. A second
# llama-server started without --metrics answers 501 there: it is asked
# a few times, then no more (counted in trace.engine_scrape.given_up).
# cw-test-timeout: 300
[ "$(id -u)" = 0 ] || { echo "needs root for BPF and chroot"; exit 77; }
. "$CW_ROOT/tests/integration/fleet_lib.sh"
. "$CW_ROOT/tests/lib/llama_server.sh"
root=$(llama_root) || { echo "no Debian sid root with llama.cpp-tools (tests/lib/debian_root.sh)"; exit 77; }
llama_model "$root" >/dev/null || fail "no model"

LP= LP2=
trap 'llama_stop "$LP"; llama_stop "$LP2"; cleanup' EXIT

# start_llama VAR [args...]: llama-server on a random free port; sets
# VAR to its pid and VAR_PORT to the port.
start_llama() {
	local var=$1 port pid i
	shift
	for i in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 40000))
		if pid=$(LLAMA_LOG=$T/llama.$port.log llama_start "$root" "$port" "$@"); then
			printf -v "$var" '%s' "$pid"
			printf -v "${var}_PORT" '%s' "$port"
			return 0
		fi
	done
	fail "llama-server did not start"
}
start_llama LP --metrics
start_llama LP2
curl -s --max-time 5 "http://127.0.0.1:$LP_PORT/metrics" | grep -q '^llamacpp:requests_processing ' ||
	fail "llama-server --metrics has no llamacpp:requests_processing"

"$CW_BIN" trace --inference auto --db "$T/t.db" --no-view --duration 8s >"$T/t.out" 2>&1 &
TP=$!
PIDS+=("$TP")
for _ in $(seq 1 100); do
	grep -q "llama.cpp (pid $LP) on port $LP_PORT" "$T/t.out" && break
	kill -0 "$TP" 2>/dev/null || break
	sleep 0.1
done
grep -q "llama.cpp (pid $LP) on port $LP_PORT" "$T/t.out" || { cat "$T/t.out"; fail "trace did not follow llama-server"; }
# Completions while the scraper asks.
end=$((SECONDS + 4))
while [ $SECONDS -lt $end ]; do
	curl -s --max-time 10 "http://127.0.0.1:$LP_PORT/completion" -d '{"prompt":"the old man","n_predict":64}' \
		>/dev/null || fail "completion"
done
wait "$TP" || { cat "$T/t.out"; fail "trace exited $?"; }

q() { sqlite3 "$T/t.db" "$1"; }
for f in queue_depth running; do
	n=$(q "SELECT count(*) FROM engine_metrics WHERE pid = $LP AND port = $LP_PORT AND engine = 'llama.cpp'
		AND name = '$f' AND value >= 0 AND session_id IS NOT NULL")
	[ "$n" -ge 3 ] || fail "$n rows of $f for llama-server: $(q 'SELECT * FROM engine_metrics LIMIT 20')"
done
# Once a second, not more: 8 s of tracing is at most 9 rounds.
n=$(q "SELECT count(DISTINCT wall_ns) FROM engine_metrics WHERE pid = $LP")
[ "$n" -le 9 ] || fail "$n scrapes in 8 s"
[ "$(q "SELECT count(*) FROM engine_metrics WHERE pid = $LP2")" = 0 ] || fail "rows for the server without metrics"
c() { q "SELECT value FROM counters WHERE name = 'trace.engine_scrape.$1'"; }
[ "$(c ok)" -ge 3 ] || fail "trace.engine_scrape.ok $(c ok)"
[ "$(c figures)" -ge 6 ] || fail "trace.engine_scrape.figures $(c figures)"
[ "$(c given_up)" -ge 1 ] || fail "trace.engine_scrape.given_up $(c given_up)"
# The server without --metrics was asked CW_SCRAPE_GIVE_UP (3) times, as
# its own requests show (when the probes saw them: fewer is not spam).
n=$(q "SELECT count(*) FROM requests WHERE pid = $LP2 AND path = '/metrics'")
[ "$n" -le 3 ] || fail "the server without metrics was asked $n times"

start_agent eng "$T/t.db"
m=$(curl -s "${AUTH[@]}" --max-time 10 --cacert "$HOME/.causeway/tls/server.crt" "https://127.0.0.1:$PORT/metrics")
for f in queue_depth running; do
	echo "$m" | grep -Eq "^causeway_inference_engine_${f}\{node=\"[^\"]*\",engine=\"llama\.cpp\",pid=\"$LP\",port=\"$LP_PORT\"\} [0-9.e+-]+$" ||
		fail "no $f of llama-server on /metrics: $(echo "$m" | grep engine_)"
done
if command -v promtool >/dev/null; then
	echo "$m" | grep -E '^(# (HELP|TYPE) )?causeway_inference_engine_' | promtool check metrics ||
		fail "promtool rejects the engine series"
fi
echo ok
