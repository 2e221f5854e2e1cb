#!/bin/bash
# Always-on soak (root): causeway trace under a size cap, on a tmpfs of its
# own, while fake_workload makes RATE cudaStreamSynchronize calls a second
# (the volume) beside a Python loop of 1 ms cudaDeviceSynchronize calls
# from a known line (the victim), with a 3 s CPU hog pinned to the
# victim's CPU every PERIOD seconds (the first 5 s in). At the end: every
# incident explained over its own seconds (cpu_preemption naming the hog
# and the line), the file within the cap, the agent's RSS over time, what
# each retention tier pruned, and the history span (how far back the
# oldest kept slow call and the stored chains reach) per GiB of cap.
#
#   bench/always_on.sh BUILD [SECONDS=60] [RATE=100000] [CAP=256MiB] [PERIOD=20]
#
# The suite's short form is tests/integration/test_trace_size_cap.sh.
set -u
B=${1:?usage: bench/always_on.sh BUILD [SECONDS] [RATE] [CAP] [PERIOD]}
SECS=${2:-60} RATE=${3:-100000} CAP=${4:-256MiB} PERIOD=${5:-20}
[ "$(id -u)" = 0 ] || { echo "needs root"; exit 1; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "$B" && pwd)
FIX=$B/fixtures FAKE=$B/fixtures/fakecuda/libcudart.so.13
SCRIPT=$ROOT/tests/fixtures/py/device_sync_loop.py
py=$(ls -d /root/.pyenv/versions/3.12.*/bin/python3 2>/dev/null | head -1)
[ -n "$py" ] || py=$(command -v python3)
D=$(mktemp -d) FS=$D/fs
mkdir "$FS"
capb=$(python3 -c "import re,sys; m=re.match(r'(\d+)([KMG])iB$', sys.argv[1]); print(int(m.group(1)) << {'K':10,'M':20,'G':30}[m.group(2)])" "$CAP")
# the filesystem: the cap, its WAL's sixteenth, a margin
mount -t tmpfs -o size=$((capb / 1048576 * 3 / 2 + 64))m "cw_soak_$$" "$FS" || exit 1
bg=()
trap 'for p in "${bg[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; umount "$FS"; rm -rf "$D"' EXIT
CPU=$(($(nproc) - 1))
line=$(grep -n '# SYNC$' "$SCRIPT" | cut -d: -f1)
db=$FS/soak.db

t0=$(date +%s)
: >"$D/hogs"
for ((at = 5; at + 3 < SECS; at += PERIOD)); do
	(sleep $((at + 2)); echo $(($(date +%s))) >>"$D/hogs"; exec chrt -f 10 stress-ng --cpu 1 --taskset $CPU --timeout 3s >/dev/null 2>&1) &
	bg+=($!)
done
"$B/causeway" trace --db "$db" --no-view --size-cap "$CAP" --cuda-lib "$FAKE" -- sh -c '
	CW_FAKE_SYNC_US=0 LD_LIBRARY_PATH=$4 "$1" -T $(($3 + 2)) -r "$8" -m sync -p 0 &
	CW_FAKE_SYNC_US=1000 "$5" "$6" "$7" 1.2 "$3" "$2"; wait' sh "$FIX/fake_workload" $CPU "$SECS" "$FIX/fakecuda" \
	"$py" "$SCRIPT" "$FAKE" "$RATE" >"$D/out" 2>"$D/err" &
tp=$!
# The agent's RSS every 10 s.
: >"$D/rss"
while kill -0 $tp 2>/dev/null; do
	sleep 10
	r=$(awk '/VmRSS/ {print $2}' /proc/$tp/status 2>/dev/null) && echo "$(($(date +%s) - t0)) $r" >>"$D/rss"
done
wait $tp
rc=$?
grep '^causeway: \(no size cap\|size cap\|stopped\)' "$D/err"
[ $rc = 0 ] || { echo "trace exited $rc: $(tail -5 "$D/err")"; exit 1; }

q() { sqlite3 "$db" "$1"; }
c() { q "SELECT coalesce(sum(value), 0) FROM counters WHERE name = '$1'"; }
calls=$(q "SELECT sum(count) FROM aggregates WHERE source = 'cuda'")
echo "calls $calls ($((calls / SECS))/s) stored $(c store.events) pruned $(c store.pruned_events) left $(q "SELECT (SELECT count(*) FROM calls) + (SELECT count(*) FROM kevents)")"
q "SELECT name, value FROM counters WHERE name LIKE 'store.pruned.%' OR name LIKE 'trace.chains.%'" | tr '\n' ' '; echo
echo "file $(stat -c %s "$db") B against the cap $capb B"
echo "agent RSS (s KiB): $(tr '\n' ' ' <"$D/rss")"
explained=0 n=0
while read -r h; do
	n=$((n + 1))
	"$B/causeway" explain --db "$db" --json --no-store --from $((h - 1)) --to $((h + 5)) >"$D/x.json" 2>/dev/null
	if python3 - "$D/x.json" "$SCRIPT" "$line" $((h - t0)) <<'PY'; then explained=$((explained + 1)); fi
import json, sys
d = json.load(open(sys.argv[1]))
ok = [c for c in d.get("chains") or [] if c["root_cause"]["kind"] == "cpu_preemption" and "stress-ng" in json.dumps(c)
      and (c.get("python") or {}).get("line") == int(sys.argv[3])]
src = (d.get("history") or {}).get("source", "raw rows")
print("incident at +%s s: %s (%s; %d stored chains)" % (sys.argv[4], "explained" if ok else "NOT explained: %r" % [
    (c["root_cause"]["summary"][-90:], (c.get("python") or {}).get("line")) for c in d.get("chains") or []], src,
    len((d.get("history") or {}).get("stored_chains") or [])))
sys.exit(0 if ok else 1)
PY
done <"$D/hogs"
echo "incidents explained: $explained of $n"
oldest=$(q "SELECT min(wall_ns) FROM events WHERE anomalous = 1")
newest=$(q "SELECT max(wall_ns) FROM events")
through=$(c store.pruned_through_wall_ns)
python3 - "$oldest" "$newest" "$through" "$capb" "$RATE" <<'PY'
import sys
oldest, newest, through, cap, rate = (int(x or 0) for x in sys.argv[1:])
span = (newest - oldest) / 1e9
raw = (newest - through) / 1e9 if through else span
gib = cap / 2**30
print("history: slow calls kept back %.0f s, every call back %.0f s, at %d calls/s under %.3f GiB:"
      " %.0f s of every call per GiB" % (span, raw, rate, gib, raw / gib))
PY
