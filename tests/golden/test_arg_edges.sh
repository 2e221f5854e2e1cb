#!/bin/bash
# Edge cases of arguments and of the config file, across commands: each is
# refused with exit 2 and exactly the expected one-line error (and the same
# as {"error"} with --json), numbers are parsed whole by one shared parser
# (no empty list elements, signs, hex, inf/nan, trailing junk or values
# outside the documented range), and user text is echoed only as a bounded
# prefix. None of these needs root: trace checks its flags before anything
# (each trace line also names a pid that cannot exist, or a 1 s duration, so
# that a build which wrongly accepts the flag stops at once instead of
# tracing the host).
set -u
BIN=${CW_BIN:?}
tmp=$(mktemp -d /tmp/cw-argedges.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
cd "$tmp" || exit 1
printf '{}\n' >ok.yaml
export HOME=$tmp # no ~/.causeway/causeway.yaml from the machine
CFG=(--config ok.yaml)

# expect "ERROR LINE" ARGS...: exit 2, that exact line on stderr, nothing on
# stdout; then with --json (where the command has it) the same message.
expect() {
	local want=$1 rc
	shift
	timeout 30 "$BIN" "$@" >out 2>err
	rc=$?
	if [ $rc -ne 2 ] || [ "$(cat err)" != "$want" ] || [ -s out ]; then
		echo "FAIL $*: exit $rc, stderr:"
		cat err
		echo "want exit 2 and: $want"
		fail=1
		return
	fi
	local a="$*"
	a=${a:0:80}
	echo "ok   ${a//$'\n'/?}"
}
expect_json() {
	local want=$1 rc
	shift
	timeout 30 "$BIN" "$@" --json >out 2>err
	rc=$?
	if [ $rc -ne 2 ] || [ "$(python3 -c 'import json,sys; print(json.load(open("out"))["error"])' 2>&1)" != "$want" ]; then
		echo "FAIL --json $*: exit $rc, stdout:"
		cat out err
		echo "want exit 2 and {\"error\": \"$want\"}"
		fail=1
		return
	fi
	local a="$*"
	echo "ok   --json ${a:0:80}"
}

# demo --speed: 0, or 0.01 to 1000 times real time.
SPEED='0 (as fast as possible) or a number from 0.01 to 1000'
for bad in 1e-300 0.001 1e-400 1e400 1001 -1 0x10 inf nan " 5" "5 " 5x ""; do
	expect "causeway: invalid --speed \"$bad\": $SPEED" demo healthy --speed "$bad" --db x.db
done
expect_json "invalid --speed \"1e-300\": $SPEED" demo healthy --speed 1e-300 --db x.db
[ ! -e x.db ] || { echo "FAIL a refused demo created its database"; fail=1; }
expect 'causeway: invalid --seed "0x10": an unsigned 64-bit integer' demo --seed 0x10 --db x.db

# trace --pid: P[,P...], no empty elements, each a pid.
PIDS='want P[,P...], each pid from 1 to 4194304'
for bad in "1,,2" ",1" "1," "," "" "1,x" "1, 2" "+1" "0" "4194305" "1;2" "0x10" "-1"; do
	expect "causeway: trace: bad --pid \"$bad\" ($PIDS)" trace --pid "$bad" --duration 1s
done
expect_json "trace: bad --pid \"1,,2\" ($PIDS)" trace --pid 1,,2 --duration 1s
many=$(seq -s, 1 65)
expect "causeway: trace: bad --pid \"${many:0:64}...\" (at most 64 pids)" trace --pid "$many"
expect 'causeway: trace: bad --agg-pct " 5" (a percentage, 0 to 100)' trace --agg-pct " 5" --pid 4194304
expect 'causeway: trace: bad --agg-pct "101" (a percentage, 0 to 100)' trace --agg-pct 101 --pid 4194304
expect 'causeway: trace: bad --ring-kb "-1" (4 to 1048576 KiB)' trace --ring-kb -1 --pid 4194304
expect 'causeway: trace: bad --ring-kb "0x400" (4 to 1048576 KiB)' trace --ring-kb 0x400 --pid 4194304
expect 'causeway: trace: bad --duration "1e-300s" (e.g. 30s, 5m)' trace --duration 1e-300s --pid 4194304
expect 'causeway: trace: bad --duration "0x10s" (e.g. 30s, 5m)' trace --duration 0x10s --pid 4194304
expect 'causeway: trace: bad --duration "infs" (e.g. 30s, 5m)' trace --duration infs --pid 4194304
expect 'causeway: trace: bad --size-cap "1e-300" (e.g. 2GiB)' trace --size-cap 1e-300 --pid 4194304

# Other numeric flags, through the same parser.
"$BIN" demo healthy --db d.db >/dev/null 2>&1 || { echo "FAIL demo for the db"; fail=1; }
expect 'causeway: query: invalid --limit "5x" (1 to 1000000000)' query --db d.db --limit 5x
expect 'causeway: query: invalid --limit "0x10" (1 to 1000000000)' query --db d.db --limit 0x10
expect 'causeway: query: invalid duration "0x10s" (e.g. 500ms, 10s, 1m)' query --db d.db --timeout 0x10s "SELECT 1"
expect 'causeway: query: invalid --limit "5junk" (1 to 1000000000)' query --nodes 127.0.0.1:9 --limit 5junk
expect 'causeway: explain: invalid pid "12x" (1 to 4194304)' explain --db d.db --pid 12x
expect 'causeway: explain: invalid pid "4194305" (1 to 4194304)' explain --db d.db --pid 4194305
expect 'causeway: explain: invalid duration "1e-300s" (e.g. 30s, 5m, 2h)' explain --db d.db --since 1e-300s
expect 'causeway: export: invalid --max-events "1e3" (1 to 100000000)' export --db d.db --max-events 1e3
expect 'causeway: where: invalid pid "+5" (1 to 4194304)' where +5
expect 'causeway: serve: invalid --per-ip "8 " (1 to 65535)' serve --db d.db --per-ip "8 "
expect 'causeway: serve: invalid --max-rows "-5" (1 or more)' serve --db d.db --max-rows -5
expect 'causeway: serve: invalid --timeout "nans" (e.g. 5s, 500ms)' serve --db d.db --timeout nans

# Node names: 1-63 of A-Z a-z 0-9 . _ -, and only 64 bytes of a bad one
# are shown back, however long it is.
long=$(printf 'n%.0s' $(seq 1 5000))
shown="$(printf 'n%.0s' $(seq 1 64))..."
RULE='1-63 of A-Z a-z 0-9 . _ -'
expect "causeway: bad --node \"$shown\" ($RULE)" --node "$long" query --db d.db
expect_json "bad --node \"$shown\" ($RULE)" --node "$long" query --db d.db
expect "causeway: bad --node \"$shown\" ($RULE)" --node "$long" serve --db d.db --listen 127.0.0.1:0
expect "causeway: bad --node \"gpu 1\" ($RULE)" --node "gpu 1" demo --db x.db
expect "causeway: bad --node \"a?b\" ($RULE)" --node "$(printf 'a\nb')" version
expect "causeway: trace: bad --node \"$shown\" ($RULE)" trace --node "$long"
printf 'node: %s\n' "$long" >longnode.yaml
expect "causeway: config \"longnode.yaml\" line 1: bad node name \"$shown\" ($RULE)" \
	query --config longnode.yaml --db d.db

# Config files: empty (or only comments) and multi-document files are refused.
: >empty.yaml
printf '# node: a\n# store: {path: x.db}\n' >comments.yaml
printf 'node: a\n---\nnode: b\n' >two.yaml
expect 'causeway: config "empty.yaml" is empty (no settings); write {} for the defaults' \
	query --config empty.yaml --db d.db
expect_json 'config "empty.yaml" is empty (no settings); write {} for the defaults' \
	query --config empty.yaml --db d.db
expect 'causeway: config "comments.yaml" is empty (no settings); write {} for the defaults' \
	demo --config comments.yaml --db x.db
expect 'causeway: config "two.yaml" line 2: a second YAML document; the config is one document' \
	query --config two.yaml --db d.db
expect 'causeway: config "two.yaml" line 2: a second YAML document; the config is one document' \
	serve --config two.yaml --db d.db
"$BIN" query "${CFG[@]}" --db d.db >/dev/null 2>err || { echo "FAIL {} config refused: $(cat err)"; fail=1; }

# What stays accepted.
"$BIN" query --db d.db --limit 3 >/dev/null 2>err || { echo "FAIL --limit 3: $(cat err)"; fail=1; }
"$BIN" --node gpu-node_1.a query --db d.db >/dev/null 2>err || { echo "FAIL good --node: $(cat err)"; fail=1; }
exit $fail
