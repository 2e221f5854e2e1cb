#!/bin/bash
# /api/v1/query under hostile SQL: each statement answered (an error or a
# result) within the server's --timeout plus a margin, fts3_tokenizer
# refused in both forms, never more than the 192 MiB result cap sent, and
# the server's peak memory (VmHWM) within the 256 MiB a query may hold
# (rows and answer together, ro_rows.c), also for zeroblob and its
# variants; the server keeps answering.
. "$CW_ROOT/tests/integration/fleet_lib.sh"
ensure_fixture
"$AGENT_DB" "$T/a.db" gpu-1 0 preempted || fail "fixture db"

start_agent gpu-1 "$T/a.db" --timeout 2s
CRT=$HOME/.causeway/tls/server.crt
B=https://127.0.0.1:$PORT
hwm() { awk '/^VmHWM:/ {print $2}' "/proc/$LAST_PID/status"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# post SQL: POSTs one statement; the status in $T/code, the body in $T/body
# (at most 300 MiB kept), the wall time in ms in $T/ms.
post() {
	local t0
	python3 -c 'import json, sys; print(json.dumps({"sql": sys.argv[1]}))' "$1" >"$T/req"
	t0=$(now_ms)
	curl -s --max-time 120 --cacert "$CRT" "${AUTH[@]}" -H 'Content-Type: application/json' --data-binary "@$T/req" \
		-o "$T/body" -w '%{http_code}' "$B/api/v1/query" >"$T/code"
	echo $(($(now_ms) - t0)) >"$T/ms"
}
# expect STATUS PATTERN SQL: answered with STATUS within 2 s + 2 s margin,
# the body matching PATTERN.
expect() {
	post "$3"
	[ "$(cat "$T/code")" = "$1" ] || fail "$3: status $(cat "$T/code"), want $1: $(head -c 300 "$T/body")"
	[ "$(cat "$T/ms")" -le 4000 ] || fail "$3: answered after $(cat "$T/ms") ms"
	grep -q -- "$2" "$T/body" || fail "$3: $(head -c 300 "$T/body") lacks $2"
}

base=$(hwm)
P="printf('%.*c',2147483647,'x') IS NULL"
expect 400 'a width or precision is larger than 100000' "SELECT $P, $P, $P"
expect 400 'like() over 16000000 and 803 bytes is too costly' \
	"SELECT hex(zeroblob(8000000)) LIKE '%'||hex(zeroblob(400))||'1%'"
expect 400 'instr() over .* is too costly' "SELECT instr(hex(zeroblob(8000000)), hex(zeroblob(3000000))||'1')"
expect 504 'query exceeded 2 s limit' \
	"WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r) SELECT count(*) FROM r"
expect 400 'fts3_tokenizer() not allowed' "SELECT hex(fts3_tokenizer('simple'))"
expect 400 'fts3_tokenizer() not allowed' "SELECT fts3_tokenizer('simple', x'0000000000000000')"
# One value is at most 16 MiB, however it is made.
expect 400 'string or blob too big' "SELECT zeroblob(500000000)"
expect 400 'string or blob too big' "SELECT length(zeroblob(500000000))"
expect 400 'string or blob too big' "SELECT group_concat(zeroblob(10000000)) FROM (SELECT 1 UNION ALL SELECT 2)"
expect 400 'string or blob too big' "WITH RECURSIVE r(i, b) AS (SELECT 1, zeroblob(200000000)
	UNION ALL SELECT i+1, b FROM r WHERE i < 3) SELECT length(b) FROM r"
expect 400 'a width or precision is larger than 100000' "SELECT printf('%.*c', 100000000, 'x')"
# 15 rows of 16 MB blobs: 240 MB stored, 480 MB as hex in JSON.
expect 400 'result is larger than 192 MiB' "WITH RECURSIVE r(i, b) AS (SELECT 1, zeroblob(16000000)
	UNION ALL SELECT i+1, zeroblob(16000000) FROM r WHERE i < 15) SELECT * FROM r"
[ "$(wc -c <"$T/body")" -le $((192 << 20)) ] || fail "sent $(wc -c <"$T/body") bytes"
# Just past the cap: 7 blobs, 224 MB as hex.
expect 400 'result is larger than 192 MiB' "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r
	WHERE i < 7) SELECT i, zeroblob(16000000) AS b FROM r"
R=$(printf 'randomblob(16000000),%.0s' $(seq 20))
expect 500 'query exceeded the 256 MiB memory limit' "SELECT ${R%,}"
peak=$(hwm)
[ $((peak - base)) -le $((256 << 10)) ] || fail "VmHWM grew from $base kB to $peak kB"
# A large result still answers: 4 blobs, 128 MB as hex, held once, as the
# answer's text.
post "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i < 4) SELECT i, zeroblob(16000000) AS b FROM r"
[ "$(cat "$T/code")" = 200 ] || fail "4 blobs: status $(cat "$T/code"): $(head -c 300 "$T/body")"
[ "$(wc -c <"$T/body")" -gt 128000000 ] && [ "$(wc -c <"$T/body")" -le $((192 << 20)) ] ||
	fail "4 blobs: sent $(wc -c <"$T/body") bytes"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["row_count"] == 4 and d["columns"] == ["i", "b"] and [r[0] for r in d["rows"]] == [1, 2, 3, 4] and len(d["rows"][3][1]) == 32000000, d["columns"]' "$T/body" ||
	fail "4 blobs: not the rows"
peak=$(hwm)
[ $((peak - base)) -le $((256 << 10)) ] || fail "VmHWM grew from $base kB to $peak kB"
curl -s --max-time 10 --cacert "$CRT" "${AUTH[@]}" "$B/api/v1/health" | grep -q '"status":"ok"' || fail "health after"
echo "serve sql guards: ok (VmHWM $base kB -> $peak kB)"
