#!/bin/bash
# What trace --inference costs a server (root): Debian sid's llama-server
# (tests/lib/llama_server.sh, a real server in a sid root) answering
# small requests to one keep-alive client (ApacheBench), its throughput
# measured alone and while causeway traces it (`trace --inference PORT`:
# the server's socket calls copied, its requests parsed and stored, its
# threads' scheduling recorded), in alternating pairs, so the machine's
# drift falls on both sides alike. Server on the last CPU, client on the
# first; trace wherever the scheduler puts it (its cost is the machine's).
#
#   bench/inference.sh BUILD [PAIRS=5] [SECONDS=5] [PATH=/health]
#
# Prints each pair's requests/s and the median of the traced/alone
# ratios; a second run with PATH=/completion (POST, one token) is the
# heavier request. The suite's functional form is
# tests/integration/test_trace_inference_llama.sh.
set -u
B=${1:?usage: bench/inference.sh BUILD [PAIRS] [SECONDS] [PATH]}
PAIRS=${2:-5} SECS=${3:-5} RPATH=${4:-/health}
[ "$(id -u)" = 0 ] || { echo "needs root"; exit 1; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "$B" && pwd)
command -v ab >/dev/null || apt-get install -y -q apache2-utils >/dev/null || { echo "no ab (apache2-utils)"; exit 1; }
CW_ROOT=$ROOT
. "$ROOT/tests/lib/llama_server.sh"
root=$(llama_root) || exit 1
llama_model "$root" >/dev/null || exit 1
D=$(mktemp -d)
PORT=$((21000 + RANDOM % 20000))
spid=$(LLAMA_LOG=$D/llama.log llama_start "$root" "$PORT") || exit 1
trap 'llama_stop "$spid"; rm -rf "$D"' EXIT
CPU=$(($(nproc) - 1))
taskset -a -c -p "$CPU" "$spid" >/dev/null
abargs=(-q -k -c 1 -t "$SECS" -n 10000000)
if [ "$RPATH" = /completion ]; then
	echo '{"prompt":"the","n_predict":1}' >"$D/body"
	abargs+=(-p "$D/body" -T application/json)
fi
rate() { # requests per second of one ab run; its request count in $D/done
	taskset -c 0 ab "${abargs[@]}" "http://127.0.0.1:$PORT$RPATH" 2>/dev/null |
		awk -v done="$D/done" '/^Requests per second:/ {print $4} /^Complete requests:/ {print $3 >done}
			/^Non-2xx responses:/ {bad = 1} END {if (bad) print "non-2xx"}'
}
traced() { # one ab run while trace --inference follows the server
	rm -f "$D/t.db"*
	"$B/causeway" trace --inference "$PORT" --db "$D/t.db" --no-view >/dev/null 2>"$D/t.err" &
	local tp=$! i
	for i in $(seq 1 200); do grep -q 'attached' "$D/t.err" && break; sleep 0.05; done
	rate
	kill -INT $tp
	wait $tp
	sqlite3 "$D/t.db" "SELECT count(*) FROM requests" >"$D/stored"
}
echo "llama-server $RPATH, ${SECS} s per run, $PAIRS pairs (alone, traced)"
ratios=()
rate >/dev/null # warm-up
for i in $(seq 1 "$PAIRS"); do
	a=$(rate)
	t=$(traced)
	r=$(python3 -c "print('%.3f' % ($t / $a))")
	ratios+=("$r")
	echo "pair $i: alone $a req/s, traced $t req/s ($(cat "$D/done") sent, $(cat "$D/stored") stored): ratio $r"
done
python3 -c "import statistics, sys; r = sorted(map(float, sys.argv[1:])); print('median traced/alone: %.3f (min %.3f, max %.3f): %.1f %% of the throughput lost' % (statistics.median(r), r[0], r[-1], 100 * (1 - statistics.median(r))))" "${ratios[@]}"
