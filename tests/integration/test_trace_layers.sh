#!/bin/bash
# The OOM, network and CUDA-graph rules on real traces (fake libcudart
# with the real graph API signatures, tests/fixtures/layers_workload.c):
#  a) a graph re-captured and re-instantiated every step -> graph_churn
#  b) a graph captured once, every 25th launch slow      -> graph_launch_tail
#  c) syncs that round-trip to a peer over loopback in a network
#     namespace where nftables drops 10 % of the data    -> network, naming
#     the peer (drops at the input hook: the segment left the sender, so
#     TCP retransmits it; an output-hook drop is a local error instead)
#  d) a memory cgroup with a 48 MiB limit OOM-kills the workload -> oom_kill,
#     naming the victim, its RSS and the limit
#  e) the same syncs without loss -> none of these kinds
# Each kind must name the workload's pid and must not appear on the
# other fixtures.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FIX=$CW_BUILD/fixtures
[ -x "$FIX/layers_workload" ] && [ -f "$FIX/fakecuda/libcudart.so.13" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
command -v ip >/dev/null || { echo "iproute2 (ip) is not installed"; exit 77; }
command -v nft >/dev/null || { echo "nftables (nft) is not installed (scripts/install-deps.sh, CW_TEST_DEPS=1)"; exit 77; }
D=$(mktemp -d) NS=cwlay$$ CG= srv=
cleanup() {
	[ -n "$srv" ] && kill "$srv" 2>/dev/null
	wait 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	[ -n "$CG" ] && rmdir "$CG" 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
export LD_LIBRARY_PATH=$FIX/fakecuda

trace() { # db, command...
	local db=$1; shift
	"$CW_BIN" trace --db "$db" --no-view -- "$@" >"$D/w.out" 2>"$D/t.err" || true
	grep -q ready "$D/w.out" || fail "workload did not start: $(cat "$D/t.err")"
}
# Prints "kind op pid share summary" per chain of the five new kinds.
chains() {
	"$CW_BIN" explain --db "$1" --json --no-store | python3 -c '
import json, sys
mine = {"oom_kill", "network", "graph_churn", "graph_launch_tail", "host_memory"}
for c in json.load(sys.stdin)["chains"]:
    k = c["root_cause"]["kind"]
    if k in mine:
        print(k, c["op"], c["pid"], round(c["explained_share"], 2), c["root_cause"]["summary"])'
}
only() { # chains-file, the one kind allowed
	local other
	other=$(awk -v k="$2" '$1 != k {print $1}' "$1" | sort -u | tr '\n' ' ')
	[ -z "$other" ] || fail "$3: unexpected kinds: $other"
}

# a) graph churn: 2 ms instantiations, 0.3 ms captures, every step.
CW_FAKE_INSTANTIATE_US=2000 CW_FAKE_CAPTURE_US=300 CW_FAKE_LAUNCH_US=30 \
	trace "$D/a.db" "$FIX/layers_workload" graph-churn 3
chains "$D/a.db" >"$D/a.txt"
cat "$D/a.txt"
pid=$(sqlite3 "$D/a.db" "SELECT pid FROM events WHERE op = 'cudaGraphLaunch' LIMIT 1")
grep -q "^graph_churn cudaGraphInstantiate $pid " "$D/a.txt" || fail "a) no graph_churn chain for pid $pid"
grep -q "capture mode global" "$D/a.txt" || fail "a) capture mode not named"
only "$D/a.txt" graph_churn "a)"
# Graph ids: each instantiation's exec (read at return) is what the next launch uses.
n=$(sqlite3 "$D/a.db" "SELECT count(*) FROM events i JOIN events l ON l.op = 'cudaGraphLaunch' AND l.arg0 = i.arg3
	AND l.pid = i.pid WHERE i.op = 'cudaGraphInstantiate' AND i.arg3 != 0")
[ "$n" -ge 100 ] || fail "a) only $n launches matched an instantiated exec handle"

# b) graph captured once; every 25th launch sleeps 3 ms in the launch.
CW_FAKE_MODE=sleep CW_FAKE_LAUNCH_US=30 CW_FAKE_GRAPH_SLOW_EVERY=25 CW_FAKE_GRAPH_SLOW_US=3000 \
	trace "$D/b.db" "$FIX/layers_workload" graph-once 3
chains "$D/b.db" >"$D/b.txt"
cat "$D/b.txt"
pid=$(sqlite3 "$D/b.db" "SELECT pid FROM events WHERE op = 'cudaGraphLaunch' LIMIT 1")
grep -q "^graph_launch_tail cudaGraphLaunch $pid " "$D/b.txt" || fail "b) no graph_launch_tail chain for pid $pid"
only "$D/b.txt" graph_launch_tail "b)"

# c) + e) loopback peer in a network namespace.
port=$((20000 + RANDOM % 20000))
ip netns add "$NS" && ip -n "$NS" link set lo up || fail "netns"
ip netns exec "$NS" "$FIX/layers_workload" ack "$port" >"$D/ack" 2>&1 &
srv=$!
for _ in $(seq 50); do grep -q listening "$D/ack" && break; sleep 0.1; done
trace "$D/e.db" ip netns exec "$NS" env CW_FAKE_SYNC_NET=127.0.0.1:$port "$FIX/layers_workload" sync 2
chains "$D/e.db" >"$D/e.txt"
[ ! -s "$D/e.txt" ] || fail "e) chains on a clean link: $(cat "$D/e.txt")"
ip netns exec "$NS" nft -f - <<EOF || fail "nft"
table inet cwloss {
	chain in {
		type filter hook input priority 0;
		tcp dport $port ip length > 1000 numgen random mod 100 < 10 drop
	}
}
EOF
trace "$D/c.db" ip netns exec "$NS" env CW_FAKE_SYNC_NET=127.0.0.1:$port "$FIX/layers_workload" sync 4
chains "$D/c.db" >"$D/c.txt"
cat "$D/c.txt"
pid=$(sqlite3 "$D/c.db" "SELECT pid FROM events WHERE op = 'cudaStreamSynchronize' LIMIT 1")
grep -q "^network cudaStreamSynchronize $pid " "$D/c.txt" || fail "c) no network chain for pid $pid"
grep -q "mostly to 127.0.0.1:$port " "$D/c.txt" || fail "c) the peer is not named"
only "$D/c.txt" network "c)"

# d) OOM kill in a memory cgroup (v2 when memory is a v2 controller, else v1).
if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
	CG=/sys/fs/cgroup/cwlay$$; mkdir "$CG"; echo $((48 << 20)) >"$CG/memory.max"; echo 0 >"$CG/memory.swap.max" 2>/dev/null || true
elif [ -d /sys/fs/cgroup/memory ]; then
	CG=/sys/fs/cgroup/memory/cwlay$$; mkdir "$CG"; echo $((48 << 20)) >"$CG/memory.limit_in_bytes"
else
	echo "no memory cgroup controller"; exit 77
fi
trace "$D/d.db" sh -c "echo \$\$ > $CG/cgroup.procs && exec $FIX/layers_workload oom"
chains "$D/d.db" >"$D/d.txt"
cat "$D/d.txt"
pid=$(sqlite3 "$D/d.db" "SELECT arg2 FROM events WHERE op = 'oom_kill' LIMIT 1")
[ -n "$pid" ] || fail "d) no oom_kill event"
grep -q "^oom_kill oom_kill $pid 1.0 oom_kill: the kernel OOM killer killed pid $pid (layers_workload)" "$D/d.txt" ||
	fail "d) no oom_kill chain for the victim $pid"
grep -q "its cgroup's limit 48 MiB" "$D/d.txt" || fail "d) the cgroup limit is not named"
grep -q "through [1-9][0-9]* pinned or managed host allocation calls" "$D/d.txt" || fail "d) the host allocation trend is missing"
# The workload's cudaMalloc calls are device memory: never the OOM's last allocation.
sqlite3 "$D/d.db" "SELECT count(*) FROM events WHERE op = 'cudaMalloc'" | grep -qv '^0$' || fail "d) no cudaMalloc traced"
"$CW_BIN" explain --db "$D/d.db" --json --no-store | python3 -c '
import json, sys
c = [c for c in json.load(sys.stdin)["chains"] if c["root_cause"]["kind"] == "oom_kill"][0]
last = [e["text"] for e in c["timeline"] if "allocation call before the kill" in e["text"]]
assert last and last[0].endswith(": cudaMallocManaged"), last' || fail "d) the last allocation named is not the managed one"
only "$D/d.txt" oom_kill "d)"
echo ok
