#!/bin/bash
# Every command reads the config file (--config before or after the
# command, else /etc/causeway/causeway.yaml, else ~/.causeway/...): the
# store path is the default --db of query, explain and export (not of
# demo, which never writes the trace store unasked), a --db flag beats it,
# check names the file, and a bad file stops every command with its line
# number and exit 2 (also as {"error"} with --json).
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$tmp" || exit 1

cat >good.yaml <<YAML
node: cfg-node
store:
  path: $tmp/from-config.db
  max_size: 1GiB
YAML
"$CW_BIN" demo incident --config good.yaml >/dev/null || fail "demo with config"
[ -f causeway-demo.db ] || fail "demo did not write ./causeway-demo.db"
[ ! -e from-config.db ] || fail "demo wrote the config's store path"
"$CW_BIN" demo incident --config good.yaml --db "$tmp/from-config.db" >/dev/null || fail "demo into the config's store"
n=$("$CW_BIN" --config good.yaml query --json "SELECT count(*) AS n FROM events" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["n"])') \
	|| fail "query with config"
[ "$n" -gt 0 ] || fail "query read no events from the config's store"
"$CW_BIN" explain --config good.yaml --json --no-store | grep -q '"cpu_preemption"' || fail "explain did not read the config's store"
"$CW_BIN" export --config good.yaml -o out.json >/dev/null 2>&1 || fail "export with config"
python3 -c 'import json; json.load(open("out.json"))' || fail "export output"
# A flag beats the config.
"$CW_BIN" demo healthy --config good.yaml --db flag.db >/dev/null || fail "demo --db"
[ -f flag.db ] || fail "--db did not win over the config"
"$CW_BIN" check --config good.yaml >check.out 2>&1
grep -q "config.*good.yaml (node cfg-node, store $tmp/from-config.db)" check.out || fail "check does not name the config: $(grep config check.out)"

printf 'node: n1\nstore:\n  path: x.db\n  max_size: lots\n' >bad.yaml
for cmd in demo query explain export merge where check serve trace; do
	"$CW_BIN" $cmd --config bad.yaml >out 2>err
	rc=$?
	[ $rc -eq 2 ] || fail "$cmd with a bad config exited $rc, want 2"
	grep -q 'bad.yaml" line 4' err || fail "$cmd: error lacks the line: $(cat err)"
done
"$CW_BIN" query --json --config bad.yaml >out 2>/dev/null
python3 -c 'import json,sys; e=json.load(open("out"))["error"]; assert "line 4" in e, e' || fail "--json error: $(cat out)"
"$CW_BIN" query --config >out 2>err && fail "--config without a file accepted"
grep -q "needs a file" err || fail "--config without a file: $(cat err)"
"$CW_BIN" explain --config missing.yaml >out 2>err
[ $? -eq 2 ] && grep -q missing.yaml err || fail "missing config: $(cat err)"
# version and --help work whatever the config.
"$CW_BIN" version --config bad.yaml >/dev/null || fail "version read the config"
"$CW_BIN" query --help --config bad.yaml >/dev/null || fail "--help read the config"
# The commented example in the repository stays valid.
"$CW_BIN" check --config "$CW_ROOT/deploy/causeway.example.yaml" >out 2>&1
grep -q "config.*causeway.example.yaml (node" out || fail "the example config: $(grep config out)"
echo ok
