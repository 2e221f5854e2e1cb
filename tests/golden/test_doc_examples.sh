#!/bin/bash
# Docs that cannot drift: every causeway command line in README.md,
# docs/*.md, the alert runbooks and each command's --help examples runs
# against demo databases (or, needing root, a network or a process, is read
# by the command's own parser: --check-args), every synopsis names only
# flags the command's --help has (tests/golden/doc_examples.py); a wrong
# flag in a copy of a page fails it; and the documented tables (demo
# scenarios, MCP tools, check items) list what the binary lists.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
ex=$CW_ROOT/tests/golden/doc_examples.py
fix=$CW_BUILD/fixtures/cluster_db
[ -x "$fix" ] || fail "fixture $fix not built (make fixtures)"

# The sandbox: the database names the docs use. Small fixture stores (a
# four-rank job whose rank 2 is preempted) where a line only reads, the
# demo's incident where the docs say it is the demo's.
b=$tmp/base
mkdir -p "$b" "$tmp/bin" "$b/build" "$tmp/.causeway"
ln -s "$CW_BIN" "$tmp/bin/causeway"
ln -s "$CW_BIN" "$b/build/causeway"
"$CW_BIN" demo --db "$b/causeway-demo.db" >/dev/null 2>&1 || fail "demo"
for n in 1 2 3; do "$fix" "$b/node$n.db" node$n $((n - 1)) --straggler-rank 2 --steps 20 >/dev/null || fail "node$n"; done
"$CW_BIN" merge "$b/node1.db" "$b/node2.db" "$b/node3.db" -o "$b/cluster.db" >/dev/null 2>&1 || fail "cluster.db"
cp "$b/node3.db" "$b/causeway.db"; cp "$b/node3.db" "$b/run.db"
cp "$b/node1.db" "$b/node-01.db"; cp "$b/node2.db" "$b/node-02.db"
cp "$b/node1.db" "$b/old.db"; cp "$b/node2.db" "$b/new.db"
# --fleet reads the config's agents (nothing answers there: parsed only)
printf 'fleet:\n  nodes:\n    - 127.0.0.1:1\n' >"$b/causeway.yaml"
cp "$b/causeway.yaml" "$b/f.yaml"; cp "$b/causeway.yaml" "$tmp/.causeway/causeway.yaml"

cmds=$("$CW_BIN" help | sed -n '/^commands:/,/^$/p' | awk 'NF > 1 && $1 != "help" { print "help:" $1 }')
cd "$CW_ROOT" || exit 1
python3 "$ex" "$CW_BIN" "$tmp" README.md docs/*.md deploy/prometheus/*.yaml $cmds || fail "doc examples (above)"

# The check itself: one wrong flag in a copy of a page fails it, naming the line.
sed 's/causeway query --group-by-line --since 1h/causeway query --group-by-lines --since 1h/' docs/query.md >"$tmp/query.md"
cmp -s docs/query.md "$tmp/query.md" && fail "docs/query.md no longer has the line this check edits"
python3 "$ex" "$CW_BIN" "$tmp" "$tmp/query.md" >"$tmp/out" && fail "a wrong flag in a doc went unnoticed"
grep -q "query.md:.*--group-by-lines.*unknown option" "$tmp/out" || fail "wrong flag not named: $(cat "$tmp/out")"
echo "ok"
