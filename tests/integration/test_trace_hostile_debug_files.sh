#!/bin/bash
# A traced process cannot silence the agent through its debug files
# (util/root_open.c). As uid 65534, in its own user and mount namespaces
# and chrooted into a tmpfs root, each of two processes maps a stripped
# copy of the stand-in libcudart (no .symtab: the symbolizer looks for its
# build-id debug file) and plants at that library's build-id path
# (/usr/lib/debug/.build-id/xx/yyyy.debug, a tmpfs of its own) either
#   (a) a FIFO, which a plain open(2) by root waits on forever, or
#   (b) a symbolic link to a root-only file of the host, which a plain
#       open through /proc/PID/root follows out of the process's root.
# Then, beside a benign root process calling the stand-in:
#   - trace --native-stacks --duration stops on time, says it attached and
#     stores the benign process's calls;
#   - where answers within its limit for both, and they run on (not in
#     tracing stop, no tracer);
#   - causeway opens no file outside the process's root: strace -y names
#     every descriptor it opened, and the root-only file is never among
#     them (nor its path among the paths opened).
set -u
[ "$(id -u)" = 0 ] || { echo "needs root"; exit 77; }
F=$CW_BUILD/fixtures
LIB=$F/fakecuda/libcudart.so.13
[ -x "$F/fake_workload" ] && [ -f "$LIB" ] || { echo "FAIL: fixtures missing (make fixtures)"; exit 1; }
for t in setpriv unshare chroot strace strip readelf sqlite3 mkfifo; do
	command -v $t >/dev/null || { echo "FAIL: $t missing (scripts/install-deps.sh)"; exit 1; }
done
D=$(mktemp -d)
chmod 755 "$D"
S=$(mktemp -d) # the host's root-only file: a 0700 directory of root's
echo "root only" > "$S/secret"
chmod 600 "$S/secret"
pids=()
cleanup() {
	[ -n "${CW_KEEP:-}" ] && cp -r "$D" /tmp/cw-hostile-keep
	local p
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$D" "$S"
}
trap cleanup EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# a stripped copy: the build-id note stays, the .symtab goes
cp "$LIB" "$D/libcudart.so.13" && strip --strip-all "$D/libcudart.so.13" || { echo "FAIL: strip"; exit 1; }
cp "$F/fake_workload" "$D/"
chmod 755 "$D/libcudart.so.13" "$D/fake_workload"
bid=$(readelf -n "$D/libcudart.so.13" | awk '/Build ID/ {print $3}')
[ ${#bid} -ge 8 ] || { echo "FAIL: no build-id in the stand-in"; exit 1; }
# the namespaces this test is about: a kernel without unprivileged user
# namespaces is not the host the issue is about, but it is a failure here
setpriv --reuid 65534 --regid 65534 --clear-groups unshare -Urm true ||
	{ echo "FAIL: unprivileged user namespaces are off"; exit 1; }

# hostile KIND OUT: a process of uid 65534 planting KIND (fifo or link)
hostile() {
	local kind=$1 out=$2
	setpriv --reuid 65534 --regid 65534 --clear-groups unshare -Urm \
		env D="$D" BID="$bid" KIND="$kind" SECRET="$S/secret" sh -c '
	set -e
	R=$(mktemp -d)
	mount -t tmpfs none "$R"
	mkdir "$R/usr" "$R/cw"
	mount --rbind /usr "$R/usr"
	for d in lib lib32 lib64 libx32 bin sbin; do
		if [ -L "/$d" ]; then ln -s "$(readlink "/$d")" "$R/$d"
		elif [ -d "/$d" ]; then mkdir "$R/$d"; mount --rbind "/$d" "$R/$d"; fi
	done
	mkdir -p "$R/usr/lib/debug"
	mount -t tmpfs none "$R/usr/lib/debug"
	dir="$R/usr/lib/debug/.build-id/$(echo "$BID" | cut -c1-2)"
	mkdir -p "$dir"
	f="$dir/$(echo "$BID" | cut -c3-).debug"
	if [ "$KIND" = fifo ]; then mkfifo "$f"; else ln -s "$SECRET" "$f"; fi
	cp "$D/libcudart.so.13" "$D/fake_workload" "$R/cw/"
	exec chroot "$R" /cw/fake_workload -L /cw/libcudart.so.13 -T 150 -m sync -w 300
	' > "$out" 2>&1 &
	pids+=($!)
}
wait_worker() { # OUTFILE: the workload's "worker" line
	for _ in $(seq 1 100); do grep -q '^worker' "$1" && return 0; sleep 0.1; done
	echo "FAIL: workload did not start:"; cat "$1"; return 1
}
# setpriv, unshare (no --fork), env, sh and chroot all exec: the last
# hostile() is the workload itself, once it runs
workload_pid() {
	local p=${pids[-1]}
	[ "$(cat "/proc/$p/comm" 2>/dev/null)" = fake_workload ] && grep -q '^Uid:[[:space:]]*65534' "/proc/$p/status" &&
		echo "$p"
}
export CW_FAKE_MODE=sleep CW_FAKE_SYNC_US=100000
hostile fifo "$D/fifo.out"
wait_worker "$D/fifo.out" || exit 1
pfifo=$(workload_pid) || { echo "FAIL: no fifo workload pid"; exit 1; }
hostile link "$D/link.out"
wait_worker "$D/link.out" || exit 1
plink=$(workload_pid) || { echo "FAIL: no link workload pid"; exit 1; }
"$F/fake_workload" -L "$LIB" -T 150 -m sync -w 300 > "$D/benign.out" 2>&1 &
benign=$!
pids+=($benign)
wait_worker "$D/benign.out" || exit 1
[ -p "/proc/$pfifo/root/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug" ] || bad "the FIFO is not planted"

# trace: stops at --duration (under strace: every open it makes, -y names
# the file; the limit is on causeway, so that strace leaves nothing behind)
t0=$(date +%s)
strace -f --seccomp-bpf -qq -y -e trace=open,openat,openat2 -o "$D/trace.strace" \
	timeout -s KILL 120 "$CW_BIN" trace --native-stacks --capture full --duration 5s --db "$D/t.db" --no-view > "$D/trace.out" 2> "$D/trace.err"
rc=$?
el=$(( $(date +%s) - t0 ))
echo "trace --duration 5s ran ${el}s (under strace)"
[ "$rc" = 0 ] || bad "trace rc=$rc after ${el}s: $(tail -3 "$D/trace.err")"
[ "$el" -lt 120 ] || bad "trace took ${el}s for --duration 5s"
grep -q 'probes attached' "$D/trace.err" || bad "no attached line: $(head -5 "$D/trace.err")"
n=$(sqlite3 "$D/t.db" "SELECT count(*) FROM events WHERE source='cuda' AND pid=$benign" 2>/dev/null)
[ "${n:-0}" -gt 0 ] || bad "no call of the benign process $benign stored"
n=$(sqlite3 "$D/t.db" "SELECT count(*) FROM events e JOIN stacks s ON s.id=e.stack_id WHERE e.pid=$benign AND s.frames LIKE '%cudaStreamSynchronize%'" 2>/dev/null)
[ "${n:-0}" -gt 0 ] || bad "the benign process's native stacks are not symbolized"

# where: answers in its limit, both run on afterwards
for p in $pfifo $plink; do
	t0=$(date +%s)
	strace -f --seccomp-bpf -qq -y -e trace=open,openat,openat2 -o "$D/where.$p.strace" \
		timeout -s KILL 20 "$CW_BIN" where --json "$p" > "$D/where.$p" 2>&1
	rc=$?
	el=$(( $(date +%s) - t0 ))
	[ "$rc" != 137 ] || bad "where $p did not answer in 20 s"
	grep -q '"native"' "$D/where.$p" || bad "where $p: no native stack: $(head -c 300 "$D/where.$p")"
	sleep 0.2
	st=$(awk '{print $3}' "/proc/$p/stat")
	[ "$st" != t ] && [ "$st" != T ] || bad "where left $p stopped (state $st)"
	grep -q '^TracerPid:[[:space:]]*0$' "/proc/$p/status" || bad "where left $p traced"
done
# the targets kept calling: the fifo one's library calls go on
kill -0 "$pfifo" "$plink" || bad "a hostile workload died"

# no open reached the root-only file: neither its name in a path opened nor
# a descriptor naming it
for s in "$D"/*.strace; do
	if grep -F "$S" "$s" | head -3 | grep .; then bad "$(basename "$s"): the root-only file was opened"; fi
done
# the build-id paths were tried (else the checks above prove nothing)
grep -q "\.build-id/${bid:0:2}/${bid:2}\.debug" "$D/trace.strace" || bad "trace never looked up the planted build-id path"
grep -q "\.build-id/${bid:0:2}/${bid:2}\.debug" "$D/where.$plink.strace" || bad "where never looked up the planted build-id path"
[ "$fail" = 0 ] && echo "ok: trace stopped on time, where answered, no open outside the roots"
exit $fail
