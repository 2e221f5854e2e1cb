# shellcheck shell=bash
# A real inference server that nobody here wrote, for tests: llama.cpp's
# llama-server from Debian sid (package llama.cpp-tools, CPU build), run in
# a sid root (tests/lib/debian_root.sh) with chroot, serving a tiny
# llama-architecture model with random weights that Debian's python3-gguf
# writes inside that root (tests/fixtures/tiny_gguf.py). The text it
# generates is nonsense; the HTTP server, the scheduler and the decode
# loop are llama.cpp's own. A 16-token completion takes a few ms.
#
#   . "$CW_ROOT/tests/lib/llama_server.sh"
#   root=$(llama_root) || { echo "FAIL: no sid root"; exit 1; }
#   pid=$(llama_start "$root" 18080) || { echo "FAIL: llama-server"; exit 1; }
#   curl -s http://127.0.0.1:18080/completion -d '{"prompt":"the old man","n_predict":16}'
#   llama_stop "$pid"
#
# llama_start prints the pid of llama-server itself (chroot execs it), the
# process that owns the listening socket and does accept4/recvfrom/sendto.
# Its threads are all named "llama-server"; decoding runs on the main
# thread, the HTTP listener and the per-connection workers are others
# (../notes/llama.md in the workspace has the strace of one request).
#
# Completions always produce exactly n_predict/max_tokens word tokens: the
# model is rigged so that EOS and byte tokens are never sampled.

# shellcheck source=tests/lib/debian_root.sh
. "$(dirname "${BASH_SOURCE[0]}")/debian_root.sh"

# Where the model lives inside the root.
LLAMA_MODEL_DIR=/opt/cw-model
LLAMA_MODEL=$LLAMA_MODEL_DIR/tiny.gguf

_llama_src() {
	local here
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	printf '%s\n' "${CW_ROOT:-$here}"
}

# Prints the sid root with llama-server and python3-gguf (built once, about
# a minute; cached by debian_root).
llama_root() {
	debian_root sid amd64 llama.cpp-tools python3-gguf
}

# llama_model ROOT: writes ROOT/opt/cw-model/tiny.gguf once (regenerated
# when tests/fixtures/tiny_gguf.py changes) and prints its path inside the
# root (/opt/cw-model/tiny.gguf).
llama_model() {
	local root=$1
	local gen
	gen=$(_llama_src)/tests/fixtures/tiny_gguf.py
	[ -f "$gen" ] || { echo "llama_model: $gen missing" >&2; return 1; }
	[ -x "$root/usr/bin/llama-server" ] || { echo "llama_model: $root has no llama-server" >&2; return 1; }
	local dir=$root$LLAMA_MODEL_DIR sum
	sum=$(sha256sum <"$gen" | cut -c1-16)
	if [ -f "$dir/tiny.gguf" ] && [ "$(cat "$dir/tiny.sum" 2>/dev/null)" = "$sum" ]; then
		printf '%s\n' "$LLAMA_MODEL"
		return 0
	fi
	mkdir -p "$dir" || return 1
	(
		flock 9
		[ -f "$dir/tiny.gguf" ] && [ "$(cat "$dir/tiny.sum" 2>/dev/null)" = "$sum" ] && exit 0
		cp "$gen" "$dir/tiny_gguf.py" || exit 1
		rm -f "$dir/tiny.gguf.tmp"
		chroot "$root" /usr/bin/python3 "$LLAMA_MODEL_DIR/tiny_gguf.py" \
			"$LLAMA_MODEL_DIR/tiny.gguf.tmp" >&2 </dev/null || {
			echo "llama_model: generating the model failed" >&2
			rm -f "$dir/tiny.gguf.tmp"
			exit 1
		}
		mv "$dir/tiny.gguf.tmp" "$dir/tiny.gguf" &&
			printf '%s\n' "$sum" >"$dir/tiny.sum"
	) 9>"$dir/.lock" || return 1
	printf '%s\n' "$LLAMA_MODEL"
}

# llama_start ROOT PORT [llama-server args...]: starts llama-server in the
# background on 127.0.0.1:PORT (context 512, 1 thread, 1 slot, no web UI;
# later args override these), waits until /health answers ok (60 s at
# most, LLAMA_START_TIMEOUT) and prints its pid. Its stdout/stderr go to
# $LLAMA_LOG (default ${TMPDIR:-/tmp}/cw-llama-server.PORT.log). Fails,
# with the log's tail on stderr, when the port is taken, the server dies,
# or it is not ready in time.
llama_start() {
	local root=$1 port=$2
	shift 2
	local log=${LLAMA_LOG:-${TMPDIR:-/tmp}/cw-llama-server.$port.log}
	local url=http://127.0.0.1:$port
	llama_model "$root" >/dev/null || return 1
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		echo "llama_start: something already listens on 127.0.0.1:$port" >&2
		return 1
	fi
	# chroot execs llama-server: $! is the server's own pid.
	chroot "$root" /usr/bin/llama-server -m "$LLAMA_MODEL" \
		--host 127.0.0.1 --port "$port" -c 512 -t 1 -tb 1 -np 1 --no-webui \
		"$@" </dev/null >"$log" 2>&1 &
	local pid=$! i
	local tries=$((${LLAMA_START_TIMEOUT:-60} * 10))
	for ((i = 0; i < tries; i++)); do
		if ! kill -0 "$pid" 2>/dev/null || [ "$(_llama_state "$pid")" = Z ]; then
			echo "llama_start: llama-server exited; log $log:" >&2
			tail -n 20 "$log" >&2
			return 1
		fi
		if [ "$(curl -s --max-time 2 "$url/health" 2>/dev/null)" = '{"status":"ok"}' ]; then
			# The listener must be this process, not a stranger that
			# took the port in the meantime.
			if _llama_listens "$pid" "$port"; then
				printf '%s\n' "$pid"
				return 0
			fi
		fi
		sleep 0.1
	done
	echo "llama_start: no healthy llama-server on $url after ${LLAMA_START_TIMEOUT:-60} s; log $log:" >&2
	tail -n 20 "$log" >&2
	llama_stop "$pid"
	return 1
}

# _llama_listens PID PORT: PID holds the socket listening on 127.0.0.1:PORT.
_llama_listens() {
	local pid=$1 hex inode
	hex=$(printf '0100007F:%04X' "$2")
	inode=$(awk -v a="$hex" '$2 == a && $4 == "0A" { print $10; exit }' "/proc/$pid/net/tcp" 2>/dev/null)
	[ -n "$inode" ] || return 1
	find "/proc/$pid/fd" -lname "socket:\[$inode\]" 2>/dev/null | grep -q .
}

_llama_state() {
	# the state letter after "(comm)" in /proc/PID/stat
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	s=${s##*) }
	printf '%s\n' "${s%% *}"
}

# llama_stop PID: SIGTERM, then SIGKILL after 10 s; returns when it is gone.
llama_stop() {
	local pid=$1 i
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 200; i++)); do
		if [ ! -d "/proc/$pid" ] || [ "$(_llama_state "$pid")" = Z ]; then
			break
		fi
		[ "$i" = 100 ] && kill -KILL "$pid" 2>/dev/null
		sleep 0.1
	done
	# reap it when it is our own child
	wait "$pid" 2>/dev/null
	return 0
}
