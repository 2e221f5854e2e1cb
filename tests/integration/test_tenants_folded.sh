#!/bin/bash
# Summary capture (trace's default) folds most calls of a container's
# process in the kernel; the per-tenant views still count every call:
# `query --per-tenant` (rows plus the folded table, in the tenant of the
# process's rows) and the API's /tenants (in the cgroup of its process
# row).
set -u
. "$CW_ROOT/tests/integration/tenant_lib.sh"
. "$CW_ROOT/tests/lib/auth.sh"
tenant_test_start
N=20000
c=$(hexid 64)
A=/system.slice/docker-$c.scope
mkcg "$A" || fail "cannot create a cgroup"
export LD_LIBRARY_PATH=$FIX/fakecuda
# The launched command is held until its library copy is attached, then
# moves itself into the container's cgroup and makes N fast calls.
CW_FAKE_SYNC_US=20 "$CW_BIN" trace --db "$D/t.db" --no-view -- sh -c \
	'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' in_cg "$V2$A" "$FIX/fake_workload" -w 1200 -n $N -m sync \
	>"$D/w.out" 2>"$D/t.err" || fail "trace: $(cat "$D/t.err")"
folded=$(sqlite3 "$D/t.db" "SELECT coalesce(sum(count), 0) FROM folded")
rows=$(sqlite3 "$D/t.db" "SELECT count(*) FROM events WHERE op = 'cudaStreamSynchronize'")
echo "$N calls: rows $rows, folded $folded"
[ "$folded" -gt 0 ] && [ $((rows + folded)) = $N ] || fail "rows $rows + folded $folded != $N"

"$CW_BIN" query --db "$D/t.db" --per-tenant --json >"$D/q.json" || fail "query --per-tenant: $(cat "$D/q.json")"
auth_shared
"$CW_BIN" serve --db "$D/t.db" --no-tls --listen 127.0.0.1:0 2>"$D/s.err" &
pids+=($!)
port=
for _ in $(seq 1 100); do
	port=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$D/s.err")
	[ -n "$port" ] && break
	sleep 0.05
done
[ -n "$port" ] || fail "serve did not start: $(cat "$D/s.err")"
curl -s "${AUTH[@]}" --max-time 20 "http://127.0.0.1:$port/api/v1/tenants" >"$D/t.json" || fail "/tenants"
python3 - "$D/q.json" "$D/t.json" "${c:0:12}" "$N" <<'PY' || fail "per-tenant counts"
import json, sys
q, t, cid, n = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3], int(sys.argv[4])
mine = [r for r in q if r["op"] == "cudaStreamSynchronize"]
assert len(mine) == 1 and cid in mine[0]["tenant"], mine
assert mine[0]["count"] + mine[0]["failed"] == n, mine
ten = [x for x in t["tenants"] if (x.get("container_id") or "").startswith(cid)]
assert len(ten) == 1 and ten[0]["calls"] == n, (ten, t)
print("query --per-tenant and /tenants: %d calls in docker container %s" % (n, cid))
PY
echo ok
