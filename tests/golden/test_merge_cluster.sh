#!/bin/bash
# merge: three node databases (cluster_db fixture, node2's clock 250 ms
# ahead, node3's 40 ms behind, rank 2 on node3 the straggler) -> counts add
# up per table and per node, stacks deduplicated and re-pointed, ids unique,
# clock offsets measured, explain on the merged file finds the union of the
# per-node chains, query works on it; same-node inputs refused unless
# relabelled; corrupt/newer/missing inputs give one clear error and leave
# no output and no temporary file behind.
set -u
fix=$CW_BUILD/fixtures/cluster_db
[ -x "$fix" ] || { echo "fixture $fix not built (make BUILD=... fixtures)"; exit 1; }
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
no_leftovers() {
	local left
	left=$(ls "$tmp" | grep -E '^out\.db|\.tmp-' || true)
	[ -z "$left" ] || fail "$1: left behind: $left"
}

"$fix" "$tmp/n1.db" node1 0 --straggler-rank 2 || fail "fixture n1"
"$fix" "$tmp/n2.db" node2 1 --straggler-rank 2 --skew-ms 250 || fail "fixture n2"
"$fix" "$tmp/n3.db" node3 2 --straggler-rank 2 --skew-ms -40 || fail "fixture n3"
# Stored chains, so the chains table has rows to carry over.
for n in 1 2 3; do
	"$CW_BIN" explain --db "$tmp/n$n.db" --json --now 1700000100 > "$tmp/x$n.json" ||
		fail "explain n$n"
done

"$CW_BIN" merge --help | grep -q 'usage: causeway merge' || fail "--help"
"$CW_BIN" merge "$tmp/n1.db" 2> "$tmp/e"; [ $? = 2 ] || fail "no -o: want exit 2"
grep -q 'no output' "$tmp/e" || fail "no -o message: $(cat "$tmp/e")"

"$CW_BIN" merge "$tmp/n1.db" "$tmp/n2.db" "$tmp/n3.db" -o "$tmp/c.db" --json > "$tmp/m.json" 2> "$tmp/e" ||
	fail "merge: $(cat "$tmp/e")"
[ ! -s "$tmp/e" ] || fail "merge wrote to stderr on small inputs: $(cat "$tmp/e")"
ls "$tmp" | grep -q '\.tmp-' && fail "temporary file left after success"

python3 - "$tmp" <<'EOF' || exit 1
import json, sqlite3, sys
d = sys.argv[1]
m = json.load(open(f"{d}/m.json"))
out = sqlite3.connect(f"{d}/c.db")
ins = [sqlite3.connect(f"{d}/n{i}.db") for i in (1, 2, 3)]
def count(db, t): return db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
def fail(msg): print("FAIL:", msg); sys.exit(1)
tables = ["sessions", "events", "offcpu", "snapshots", "processes", "threads", "cgroups",
          "kernel_names", "chains", "aggregates", "counters", "py_code"]
# The merge itself is one more session (kind 'merge', on the first node).
own = " AND kind != 'merge'"
if out.execute("SELECT count(*), min(node) FROM sessions WHERE kind = 'merge'").fetchone() != (1, "node1"):
    fail("merge session: " + repr(out.execute("SELECT * FROM sessions WHERE kind = 'merge'").fetchall()))
for t in tables:
    want = sum(count(db, t) for db in ins)
    got = out.execute(f"SELECT count(*) FROM {t} WHERE 1" + (own if t == "sessions" else "")).fetchone()[0]
    if got != want or m["rows"][t] != want + (t == "sessions"):
        fail(f"{t}: merged {got}, json {m['rows'][t]}, inputs sum {want}")
    for i, db in enumerate(ins, 1):
        n = out.execute(f"SELECT count(*) FROM {t} WHERE node = ?" + (own if t == "sessions" else ""),
                        (f"node{i}",)).fetchone()[0]
        jn = [x for x in m["nodes"] if x["node"] == f"node{i}"][0]["rows"][t]
        if n != count(db, t) or jn != n + (t == "sessions" and i == 1):
            fail(f"{t} node{i}: {n} rows (json {jn}), input has {count(db, t)}")
if count(out, "chains") < 1:
    fail("no chains carried over")
# Shared stacks (hashes 42, 43; python 1001) once; each node's own kept.
if count(out, "stacks") != 5 or count(out, "py_stacks") != 4:
    fail(f"stacks {count(out, 'stacks')} (want 5), py_stacks {count(out, 'py_stacks')} (want 4)")
if m["deduplicated"]["stacks"] != {"read": 9, "kept": 5}:
    fail(f"dedup json {m['deduplicated']}")
# Every event still points at the same frames and python line as in its input.
for i, db in enumerate(ins, 1):
    q = ("SELECT e.seq, s.frames, p.user_file, p.user_line FROM events e LEFT JOIN stacks s ON s.id = e.stack_id"
         " LEFT JOIN py_stacks p ON p.id = e.py_stack_id")
    a = sorted(db.execute(q).fetchall(), key=repr)
    b = sorted(out.execute(q + " WHERE e.node = ?", (f"node{i}",)).fetchall(), key=repr)
    if a != b:
        fail(f"node{i}: stack references differ after merge")
# Sessions re-pointed: every event's session is a session of its own node.
bad = out.execute("SELECT count(*) FROM events e JOIN sessions s ON s.id = e.session_id"
                  " WHERE s.node != e.node").fetchone()[0]
orphans = out.execute("SELECT count(*) FROM events WHERE session_id NOT IN (SELECT id FROM sessions)").fetchone()[0]
if bad or orphans:
    fail(f"{bad} events point at another node's session, {orphans} at none")
# Clock offsets against node1: +250 ms and -40 ms within 1 ms.
sk = {x["node"]: x["clock_offset_ns"] for x in m["nodes"]}
if m["skew"]["reference"] != "node1" or sk["node1"] != 0:
    fail(f"reference {m['skew']}")
if abs(sk["node2"] - 250e6) > 1e6 or abs(sk["node3"] + 40e6) > 1e6:
    fail(f"offsets {sk}")
meta = json.loads(out.execute("SELECT value FROM meta WHERE key = 'merge.skew'").fetchone()[0])
if abs(meta["nodes"]["node2"]["offset_ns"] - 250e6) > 1e6:
    fail(f"meta merge.skew {meta}")
print("merged counts, stacks and offsets ok:", sk)
EOF

# explain on the merged file: the same chains (kind, op, node) as the
# nodes' own explains. A straggler chain compares nodes, so only the merged
# file can have it; it is checked in test_merge_straggler.
"$CW_BIN" explain --db "$tmp/c.db" --json --no-store > "$tmp/xc.json" || fail "explain on merged"
python3 - "$tmp" <<'EOF' || exit 1
import json, sys
d = sys.argv[1]
def keys(f):
    return sorted((c["root_cause"]["kind"], c["op"], c["node"]) for c in json.load(open(f))["chains"]
                  if c["root_cause"]["kind"] != "straggler")
union = sorted(sum((keys(f"{d}/x{i}.json") for i in (1, 2, 3)), []))
merged = keys(f"{d}/xc.json")
if not union or union != merged:
    print("FAIL: per-node chains", union, "merged", merged); sys.exit(1)
print("explain chains match:", merged)
EOF
"$CW_BIN" query --db "$tmp/c.db" "SELECT node, count(*) FROM events GROUP BY node" > "$tmp/q" || fail "query on merged"
grep -q node3 "$tmp/q" || fail "query output: $(cat "$tmp/q")"

# Three demo databases (the product's own generator, global --node): the
# merged file's chains are exactly the nodes' chains; python stacks of the
# same simulated program are shared; no collectives, so no offsets.
for d in "incident a" "io-contention b" "periodic-spike c"; do
	set -- $d
	"$CW_BIN" --node "demo-$2" demo "$1" --db "$tmp/d$2.db" > /dev/null || fail "demo $1"
	"$CW_BIN" explain --db "$tmp/d$2.db" --json --no-store > "$tmp/dx$2.json" || fail "explain demo $1"
done
"$CW_BIN" merge "$tmp/da.db" "$tmp/db.db" "$tmp/dc.db" -o "$tmp/dm.db" --json > "$tmp/dm.json" || fail "merge demos"
"$CW_BIN" explain --db "$tmp/dm.db" --json --no-store > "$tmp/dxm.json" || fail "explain merged demos"
python3 - "$tmp" <<'PY' || exit 1
import json, sys
d = sys.argv[1]
def keys(f):
    return sorted((c["root_cause"]["kind"], c["op"], c["node"]) for c in json.load(open(f))["chains"])
union = sorted(sum((keys(f"{d}/dx{x}.json") for x in "abc"), []))
merged = keys(f"{d}/dxm.json")
if len(union) < 3 or union != merged:
    print("FAIL: demo chains", union, "merged", merged); sys.exit(1)
m = json.load(open(f"{d}/dm.json"))
ins = m["input_rows"]["events"]
if m["rows"]["events"] != ins or m["deduplicated"]["py_stacks"]["kept"] >= m["deduplicated"]["py_stacks"]["read"]:
    print("FAIL: demo merge summary", m["rows"], m["deduplicated"]); sys.exit(1)
if any(n["clock_offset_ns"] is not None for n in m["nodes"]):
    print("FAIL: offsets without collectives", m["nodes"]); sys.exit(1)
print("demo chains match:", merged)
PY

# The same node twice: refused, nothing written.
cp "$tmp/n1.db" "$tmp/n1b.db"
"$CW_BIN" merge "$tmp/n1.db" "$tmp/n1b.db" -o "$tmp/out.db" 2> "$tmp/e"
rc=$?
[ $rc = 1 ] || fail "same node: exit $rc, want 1"
grep -q 'both hold node "node1"; relabel one with --force-node' "$tmp/e" || fail "same node message: $(cat "$tmp/e")"
[ "$(wc -l < "$tmp/e")" = 1 ] || fail "same node: more than one line: $(cat "$tmp/e")"
no_leftovers "same node"
# Relabelled by path, and (bare name) the last input.
"$CW_BIN" merge "$tmp/n1.db" "$tmp/n1b.db" -o "$tmp/out.db" --force-node "$tmp/n1b.db=node4" > /dev/null ||
	fail "--force-node INPUT=NAME"
[ "$(sqlite3 "$tmp/out.db" "SELECT group_concat(node) FROM (SELECT DISTINCT node FROM events ORDER BY 1)")" = "node1,node4" ] ||
	fail "relabel: nodes $(sqlite3 "$tmp/out.db" 'SELECT DISTINCT node FROM events')"
cp "$tmp/n3.db" "$tmp/n3b.db"
"$CW_BIN" merge "$tmp/n3.db" "$tmp/n3b.db" -o "$tmp/out2.db" --force-node node9 --json > "$tmp/m2.json" ||
	fail "bare --force-node"
[ "$(sqlite3 "$tmp/out2.db" "SELECT json_extract(json, '\$.node') FROM chains WHERE node = 'node9'")" = node9 ] ||
	fail "relabelled chain json: $(sqlite3 "$tmp/out2.db" 'SELECT node, json FROM chains')"
grep -q '"relabelled_from": "node3"' "$tmp/m2.json" || fail "json lacks relabelled_from"
rm -f "$tmp"/out*.db*
# Existing output: refused without --force.
: > "$tmp/out.db"
"$CW_BIN" merge "$tmp/n1.db" -o "$tmp/out.db" 2> "$tmp/e" && fail "existing output overwritten without --force"
grep -q 'exists; remove it or pass --force' "$tmp/e" || fail "exists message: $(cat "$tmp/e")"
"$CW_BIN" merge "$tmp/n1.db" -o "$tmp/out.db" --force > /dev/null || fail "--force"
rm -f "$tmp"/out.db*

# Bad inputs: one clear line, exit 6, no output, no temporary file.
head -c 8192 /dev/urandom > "$tmp/corrupt.db"
sqlite3 "$tmp/newer.db" 'CREATE TABLE events (x); PRAGMA user_version = 99'
for bad in corrupt newer missing; do
	"$CW_BIN" merge "$tmp/n1.db" "$tmp/$bad.db" -o "$tmp/out.db" > "$tmp/o" 2> "$tmp/e"
	rc=$?
	[ $rc = 6 ] || fail "$bad input: exit $rc, want 6: $(cat "$tmp/e")"
	[ "$(wc -l < "$tmp/e")" = 1 ] || fail "$bad: want one line: $(cat "$tmp/e")"
	grep -q "\"$tmp/$bad.db\"" "$tmp/e" || fail "$bad: message does not name the input: $(cat "$tmp/e")"
	no_leftovers "$bad input"
done
grep -q 'missing\.db" does not exist' "$tmp/e" || fail "missing message: $(cat "$tmp/e")"
"$CW_BIN" merge "$tmp/n1.db" "$tmp/corrupt.db" -o "$tmp/out.db" --json > "$tmp/o" 2> /dev/null
python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["error"]; assert "is not a causeway database" in e, e' \
	"$tmp/o" || fail "--json error: $(cat "$tmp/o")"
no_leftovers "json error"
# An input that fails half-way (its events table unreadable): the partial
# output is removed.
cp "$tmp/n2.db" "$tmp/half.db"
sqlite3 "$tmp/half.db" 'DROP TABLE offcpu; CREATE TABLE offcpu (id INTEGER PRIMARY KEY)'
"$CW_BIN" merge "$tmp/n1.db" "$tmp/half.db" -o "$tmp/out.db" 2> "$tmp/e" && fail "broken input merged"
grep -q 'merging "'"$tmp"'/half.db"' "$tmp/e" || fail "half-way message: $(cat "$tmp/e")"
no_leftovers "half-way failure"
# Interrupted (SIGTERM half-way through a merge of twelve demo inputs):
# "interrupted by a signal; nothing was written", no output, no temporary file.
args=()
for i in $(seq 1 12); do
	cp "$tmp/da.db" "$tmp/copy$i.db"
	args+=("$tmp/copy$i.db" --force-node "$tmp/copy$i.db=copy$i")
done
"$CW_BIN" merge "${args[@]}" -o "$tmp/out.db" 2> "$tmp/e" &
mpid=$!
sleep 0.5
kill -TERM $mpid
wait $mpid
rc=$?
if [ -e "$tmp/out.db" ]; then
	echo "note: the merge finished before the signal; interruption not exercised"
else
	[ $rc != 0 ] || fail "interrupted merge exited 0"
	grep -q 'interrupted by a signal; nothing was written' "$tmp/e" || [ $rc = 143 ] || fail "interrupt message: $(cat "$tmp/e")"
	no_leftovers "interrupted merge"
fi
echo "ok"
