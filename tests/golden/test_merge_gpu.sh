#!/bin/bash
# merge keeps every table: three GPU demo databases on three nodes
# (thermal-throttling, power-capping, gpu-memory-pressure) merged give each
# node its own GPU diagnosis at the kind and severity the single file gets;
# every table of the inputs is copied row for row; the merge is recorded as
# a session, so demo refuses to replace the merged file without --force; a
# table merge does not know stops it; --force-node names the input before
# it and refuses a rename that would drop another; failing calls counted
# apart in the aggregates stay apart.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$tmp" || exit 1

i=0
for s in thermal-throttling power-capping gpu-memory-pressure; do
	i=$((i + 1))
	"$CW_BIN" --node "gpu$i" demo "$s" --db "$s.db" > /dev/null || fail "demo $s"
	"$CW_BIN" explain --db "$s.db" --json > "$s.json" || fail "explain $s"
done
"$CW_BIN" merge thermal-throttling.db power-capping.db gpu-memory-pressure.db -o m.db --json > m.json 2> err ||
	fail "merge: $(cat err)"
python3 - <<'EOF' || exit 1
import json, sqlite3, sys
def fail(msg): print("FAIL:", msg); sys.exit(1)
out = sqlite3.connect("m.db")
ins = [sqlite3.connect(s + ".db") for s in ("thermal-throttling", "power-capping", "gpu-memory-pressure")]
m = json.load(open("m.json"))
tables = [r[0] for r in ins[0].execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
                                       " AND name NOT LIKE 'sqlite_%' AND name NOT IN ('meta', 'stacks', 'py_stacks',"
                                       " 'strings', 'call_ops', 'call_threads', 'call_args')")]
for t in ("gpu_samples", "gpu_devices", "gpu_processes", "nccl_calls", "cgroup_pressure", "chains", "events"):
    if t not in tables:
        fail(f"table {t} missing from the demo schema: {tables}")
for t in tables:
    want = sum(db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for db in ins)
    got = out.execute(f"SELECT count(*) FROM {t}" + (" WHERE kind != 'merge'" if t == "sessions" else "")).fetchone()[0]
    if got != want:
        fail(f"{t}: {got} rows merged, inputs hold {want}")
    if t in m["rows"] and t != "sessions" and m["rows"][t] != want:
        fail(f"{t}: --json says {m['rows'][t]}, inputs hold {want}")
gpu = out.execute("SELECT node, count(*) FROM gpu_samples GROUP BY node ORDER BY node").fetchall()
if [n for n, _ in gpu] != ["gpu1", "gpu2", "gpu3"]:
    fail(f"gpu_samples nodes {gpu}")
s = out.execute("SELECT node, command FROM sessions WHERE kind = 'merge'").fetchall()
if len(s) != 1 or "thermal-throttling.db" not in s[0][1] or s[0][0] not in ("gpu1", "gpu2", "gpu3"):
    fail(f"merge session {s}")
EOF
"$CW_BIN" explain --db m.db --json > mx.json || fail "explain merged"
python3 - <<'EOF' || exit 1
import json, sys
def fail(msg): print("FAIL:", msg); sys.exit(1)
def diag(path):
    return {(c["node"], c["root_cause"]["kind"], c["severity"]) for c in json.load(open(path))["chains"]}
merged = diag("mx.json")
for s, kind in (("thermal-throttling", "thermal_throttling"), ("power-capping", "power_capping"),
                ("gpu-memory-pressure", "gpu_memory_pressure")):
    own = diag(s + ".json")
    if not any(k == kind for _, k, _ in own):
        fail(f"{s}: the single file has no {kind} chain: {own}")
    if not own <= merged:
        fail(f"{s}: single file {sorted(own)}, merged file lost {sorted(own - merged)} (has {sorted(merged)})")
EOF

# Wall shares are per node: the merged file's share of an op is the mean
# of its nodes' shares (the three files cover the same seconds), never
# their sum (three nodes' time over one window read 200 %+).
for s in thermal-throttling power-capping gpu-memory-pressure m; do
	"$CW_BIN" query --db "$s.db" --json > "ops-$s.json" || fail "query summary $s"
done
python3 - <<'EOF' || exit 1
import json, sys
def shares(s): return {(r["source"], r["op"]): r["wall_share"] for r in json.load(open(f"ops-{s}.json"))}
singles = [shares(s) for s in ("thermal-throttling", "power-capping", "gpu-memory-pressure")]
merged = shares("m")
key = ("cuda", "cudaStreamSynchronize")
want = sum(x.get(key, 0) for x in singles) / 3
if not merged.get(key) or abs(merged[key] - want) > 0.02:
    print(f"FAIL: merged wall share of {key} {merged.get(key)}, the nodes' mean {want:.3f}"); sys.exit(1)
if sum(merged.values()) > max(sum(x.values()) for x in singles) + 0.05:
    print(f"FAIL: merged wall shares sum to {sum(merged.values()):.2f}"); sys.exit(1)
EOF

# The merged file is no demo database.
cp m.db keep.db
"$CW_BIN" demo --db m.db > /dev/null 2> err && fail "demo replaced a merged database without --force"
grep -q 'not a demo database' err || fail "demo refusal: $(cat err)"
cmp -s m.db keep.db || fail "demo changed the merged file it refused"
"$CW_BIN" demo --db m.db --force > /dev/null 2> err || fail "demo --force over a merged file: $(cat err)"

# A table merge does not know stops it, naming the table; nothing written.
cp power-capping.db odd.db
sqlite3 odd.db "CREATE TABLE future_rows (x INTEGER); INSERT INTO future_rows VALUES (1)" || fail "sqlite3"
"$CW_BIN" merge thermal-throttling.db odd.db -o u.db 2> err && fail "merged an input with an unknown table"
grep -q 'table merge does not know ("future_rows")' err || fail "unknown table message: $(cat err)"
[ ! -e u.db ] && ! ls | grep -q '^u\.db' || fail "unknown table: output left behind"

# --force-node NAME is for the input just before it.
"$CW_BIN" demo power-capping --db a.db > /dev/null && cp a.db b.db || fail "demo a.db"
"$CW_BIN" merge a.db --force-node x b.db --force-node y -o xy.db --json > xy.json 2> err || fail "a=x b=y: $(cat err)"
[ "$(sqlite3 xy.db 'SELECT group_concat(node) FROM (SELECT DISTINCT node FROM gpu_samples ORDER BY node)')" = x,y ] ||
	fail "a=x b=y: nodes $(sqlite3 xy.db 'SELECT DISTINCT node FROM gpu_samples')"
"$CW_BIN" merge a.db b.db --force-node x --force-node y -o z.db 2> err && fail "two names for b.db accepted"
grep -q '"b.db" is renamed twice' err || fail "twice message: $(cat err)"
"$CW_BIN" merge --force-node x a.db b.db -o z.db 2> err && fail "--force-node before any input accepted"
grep -q 'comes before any input' err || fail "before-input message: $(cat err)"
[ ! -e z.db ] || fail "refused merge wrote z.db"

# Failing calls counted apart (aggregates.errors, schema v10) survive a merge.
"$CW_BIN" demo nccl-error --db e.db > /dev/null || fail "demo nccl-error"
"$CW_BIN" merge e.db -o em.db > /dev/null 2> err || fail "merge e.db: $(cat err)"
q='SELECT sum(count) || " " || sum(errors) FROM aggregates WHERE op = "ncclAllReduce"'
[ "$(sqlite3 em.db "$q")" = "$(sqlite3 e.db "$q")" ] && [ "$(sqlite3 e.db "$q")" = "40 51" ] ||
	fail "errors through merge: $(sqlite3 e.db "$q") -> $(sqlite3 em.db "$q")"
echo "ok"
