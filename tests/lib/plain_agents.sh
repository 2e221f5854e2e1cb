# Loopback agents over plain HTTP for the golden fleet tests (sourced):
# a temporary directory $tmp removed at exit with every agent started,
# fail(), and the token every server and client here shares ($CW_TOKEN).
set -u
tmp=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
. "$CW_ROOT/tests/lib/auth.sh"
auth_shared

# plain_agent DB [global flags...]: `serve --no-tls` of DB on a free
# loopback port; sets PORT, ADDR (http://127.0.0.1:PORT) and LAST_PID.
plain_agent() {
	local db=$1 log
	shift
	# A fresh name each time: plain_agent may run in a subshell (a
	# process substitution), where pids does not grow, and a reused log
	# still holds the last agent's port until the new one truncates it.
	log=$(mktemp "$tmp/agent-XXXXXX.log")
	"$CW_BIN" "$@" serve --db "$db" --listen 127.0.0.1:0 --no-tls > /dev/null 2> "$log" &
	LAST_PID=$!
	pids+=($LAST_PID)
	PORT=
	for _ in $(seq 1 100); do
		PORT=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" 2> /dev/null)
		[ -n "$PORT" ] && break
		sleep 0.05
	done
	[ -n "$PORT" ] || { cat "$log"; fail "serve $db did not start"; }
	ADDR=http://127.0.0.1:$PORT
}
