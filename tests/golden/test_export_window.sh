#!/bin/bash
# export of one store reads all of it by default, as explain and query do
# (the demo's incident spans more than the 60 s fleet window), and
# --max-events N keeps exactly the newest N slices.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
slices() { python3 -c 'import json,sys; print(sum(e.get("ph") == "X" for e in json.load(open(sys.argv[1]))["traceEvents"]))' "$1"; }

"$CW_BIN" demo --db "$tmp/d.db" >/dev/null 2>&1 || fail "demo"
span=$(sqlite3 "$tmp/d.db" "SELECT (max(wall_ns) - min(wall_ns)) / 1000000000 FROM events")
[ "$span" -gt 60 ] || fail "the demo spans only ${span}s: no test of the default window"

"$CW_BIN" export --db "$tmp/d.db" -o "$tmp/all.json" 2>"$tmp/e" || fail "export: $(cat "$tmp/e")"
"$CW_BIN" export --db "$tmp/d.db" --since 1000000h -o "$tmp/long.json" 2>/dev/null || fail "export --since"
all=$(slices "$tmp/all.json") long=$(slices "$tmp/long.json")
[ "$all" -eq "$long" ] || fail "default window holds $all slices, the whole store $long"
grep -q "warning" "$tmp/e" && fail "default export cut: $(cat "$tmp/e")"

for n in 1 100 777; do
	"$CW_BIN" export --db "$tmp/d.db" --max-events $n -o "$tmp/cap.json" 2>"$tmp/e" || fail "--max-events $n"
	got=$(slices "$tmp/cap.json")
	[ "$got" -eq $n ] || fail "--max-events $n kept $got slices"
	grep -q "kept the newest $n (from" "$tmp/e" || fail "--max-events $n: $(cat "$tmp/e")"
done
echo "ok"
