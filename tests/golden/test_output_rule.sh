#!/bin/bash
# The output-file rule for every writer: export -o the database itself
# (by name, through a symbolic link, a hard link, its -wal) is refused and
# the database stays intact; a character device (made with mknod here,
# never the host's /dev) and a FIFO are written in place and stay what
# they are; a symbolic link is written through and stays a link; merge
# --force and demo --db refuse an input, a device and a FIFO; the MCP
# export_timeline tool writes only inside its export directory and
# replaces nothing without "overwrite"; SIGINT, SIGTERM or SIGHUP during an
# export leaves no temporary file.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$tmp" || exit 1
"$CW_BIN" demo --db e.db >/dev/null 2>&1 || fail "demo database"
"$CW_BIN" demo healthy --db f.db >/dev/null 2>&1 || fail "second demo database"
sum() { sha256sum "$1" | cut -d' ' -f1; }
intact() { # DB SUM WHAT
	[ "$(sum "$1")" = "$2" ] || fail "$3: \"$1\" changed"
	[ "$(sqlite3 "$1" 'PRAGMA integrity_check')" = ok ] || fail "$3: \"$1\" fails integrity_check"
}
no_tmp() { ! ls -a | grep -q '\.tmp-' || fail "$1: temporary file left: $(ls -a | grep '\.tmp-')"; }
refused() { # WHAT CMD...: non-zero exit, one line naming the refusal
	local what=$1; shift
	"$@" >out 2>err && fail "$what: exit 0"
	grep -q 'refusing to write' err || fail "$what: message: $(cat err)"
	[ "$(wc -l <err)" = 1 ] || fail "$what: want one line: $(cat err)"
}
E=$(sum e.db)
F=$(sum f.db)

# export onto the database it reads.
ln -s e.db link.db
ln e.db hard.db
for o in e.db link.db hard.db e.db-wal "$tmp/./e.db"; do
	refused "export -o $o" "$CW_BIN" export --db e.db --since 1000d -o "$o"
	intact e.db "$E" "export -o $o"
done
grep -q 'it is the input "e.db"\|-wal file of the input' err || fail "input message: $(cat err)"
[ -L link.db ] || fail "the link to the database was replaced"
"$CW_BIN" export --db e.db --since 1000d -o e.db --json >out 2>/dev/null
python3 -c 'import json,sys; assert "refusing to write" in json.load(open("out"))["error"]' || fail "--json refusal: $(cat out)"
no_tmp "export onto the database"

# A character device (mknod'ed here) is written in place and stays one.
if mknod null c 1 3 2>/dev/null; then
	"$CW_BIN" export --db e.db --since 1000d -o null 2>err || fail "export -o device: $(cat err)"
	[ -c null ] || fail "the device node was replaced: $(ls -l null)"
	"$CW_BIN" merge e.db f.db --force-node f.db=f -o null --force 2>err && fail "merge --force onto a device: exit 0"
	grep -q 'refusing to write "null": it is a character device' err || fail "merge device message: $(cat err)"
	[ -c null ] || fail "merge replaced the device node"
	"$CW_BIN" demo healthy --db null >/dev/null 2>err && fail "demo --db onto a device: exit 0"
	[ -c null ] || fail "demo replaced the device node"
	ln -s null link-null
	"$CW_BIN" export --db e.db --since 1000d -o link-null 2>err || fail "export -o link to device: $(cat err)"
	[ -L link-null ] && [ -c null ] || fail "link to the device replaced"
else
	echo "note: mknod not permitted here; device cases skipped"
fi

# A FIFO with a reader: the reader gets the whole export, the FIFO stays.
mkfifo fifo
cat fifo >from-fifo.json &
"$CW_BIN" export --db e.db --since 1000d -o fifo 2>err || fail "export -o fifo: $(cat err)"
wait
[ -p fifo ] || fail "the FIFO was replaced"
python3 -c 'import json; assert json.load(open("from-fifo.json"))["traceEvents"]' || fail "FIFO reader got no trace"
"$CW_BIN" merge e.db f.db --force-node f.db=f -o fifo --force 2>err && fail "merge onto a FIFO: exit 0"
[ -p fifo ] || fail "merge replaced the FIFO"

# /dev/stdout is the standard output, in place.
"$CW_BIN" export --db e.db --since 1000d -o /dev/stdout 2>/dev/null | python3 -c 'import json,sys; json.load(sys.stdin)' ||
	fail "export -o /dev/stdout"

# A symbolic link is written through: the file it names is replaced, the link stays.
echo old >target.json
ln -s target.json link.json
"$CW_BIN" export --db e.db --since 1000d -o link.json 2>err || fail "export -o link: $(cat err)"
[ -L link.json ] || fail "the link itself was replaced by a file"
python3 -c 'import json; json.load(open("target.json"))' || fail "the link's target holds no export"
no_tmp "export through a link"

# merge --force never writes an input (by name, link, hard link, -wal).
for o in e.db link.db hard.db e.db-wal; do
	refused "merge --force -o $o" "$CW_BIN" merge e.db f.db --force-node f.db=f -o "$o" --force
	intact e.db "$E" "merge --force -o $o"
	intact f.db "$F" "merge --force -o $o"
done
"$CW_BIN" merge e.db f.db --force-node f.db=f -o link.json --force >/dev/null 2>err || fail "merge through a link: $(cat err)"
[ -L link.json ] && [ "$(sqlite3 target.json 'PRAGMA integrity_check')" = ok ] || fail "merge through a link"
no_tmp "merge"

# MCP stdio export_timeline: confined to mcp.export_dir, no replacing unasked.
mkdir exp
printf 'mcp:\n  export_dir: %s\n' "$tmp/exp" >cfg.yaml
echo keep >exp/keep.json
echo victim >victim
cp e.db exp/served.db
S=$(sum exp/served.db)
ln -s "$tmp" exp/up
ln -s ../victim exp/vl
call() { # ID ARGS
	printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"export_timeline","arguments":%s}}\n' "$1" "$2"
}
{
	echo '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
	echo '{"jsonrpc":"2.0","method":"notifications/initialized"}'
	call 1 "{\"since\":\"1000d\",\"path\":\"$tmp/victim\",\"overwrite\":true}"
	call 2 '{"since":"1000d","path":"../victim","overwrite":true}'
	call 3 '{"since":"1000d","path":"served.db","overwrite":true}'
	call 4 "{\"since\":\"1000d\",\"path\":\"$tmp/exp/served.db-wal\",\"overwrite\":true}"
	call 5 '{"since":"1000d","path":"keep.json"}'
	call 6 '{"since":"1000d","path":"up/victim","overwrite":true}'
	call 7 '{"since":"1000d","path":"vl","overwrite":true}'
	call 8 '{"since":"1000d","path":"new.json"}'
	call 9 '{"since":"1000d","path":"keep2.json"}'
} >in
echo keep >exp/keep2.json
"$CW_BIN" --config cfg.yaml mcp --db exp/served.db <in >mcp.out 2>mcp.err
python3 - mcp.out <<'EOF' || fail "MCP answers (above)"
import json, sys
ans = {m["id"]: m for m in map(json.loads, open(sys.argv[1]))}
for i, want in [(1, "outside the export directory"), (2, '".."'), (3, "it is the input"), (4, "-wal file of the input"),
                (5, '"overwrite": true'), (6, "symbolic link"), (7, "symbolic link"), (9, '"overwrite": true')]:
    r = ans[i]["result"]
    t = r["content"][0]["text"]
    if not r.get("isError") or want not in t:
        print(f"FAIL: call {i}: want an error with {want!r}, got {t!r}"); sys.exit(1)
r = ans[8]["result"]
if r.get("isError") or not r["structuredContent"]["path"].endswith("/exp/new.json"):
    print("FAIL: call 8 (a new name inside):", r); sys.exit(1)
EOF
[ "$(cat victim)" = victim ] || fail "MCP overwrote a file outside the export directory"
[ "$(cat exp/keep.json)" = keep ] && [ "$(cat exp/keep2.json)" = keep ] || fail "MCP replaced a file without overwrite"
[ -L exp/vl ] && [ -L exp/up ] || fail "MCP replaced a link"
intact exp/served.db "$S" "MCP onto the served database"
python3 -c 'import json; json.load(open("exp/new.json"))' || fail "MCP export inside the directory"

# A signal during a slow export (four copies of the demo merged) leaves no temporary file.
for i in 1 2 3; do cp e.db "c$i.db"; done
"$CW_BIN" merge e.db c1.db c2.db c3.db --force-node c1.db=c1 --force-node c2.db=c2 --force-node c3.db=c3 \
	-o big.db >/dev/null 2>&1 || fail "big database"
mkdir sig
for s in INT TERM HUP; do
	caught=0
	for attempt in 1 2 3 4 5; do
		# Background jobs start with SIGINT ignored; the export gets it at its default.
		env --default-signal=INT,HUP "$CW_BIN" export --db big.db --since 1000d -o sig/out.json 2>/dev/null &
		pid=$!
		for _ in $(seq 1 400); do
			ls sig | grep -q '\.tmp-' && break
			kill -0 $pid 2>/dev/null || break
			sleep 0.005
		done
		if ls sig | grep -q '\.tmp-'; then
			kill -s "$s" $pid
			wait $pid
			rc=$?
			[ $rc -gt 128 ] || fail "SIG$s: export exited $rc, not by the signal"
			caught=1
			break
		fi
		wait $pid
		rm -f sig/out.json
	done
	[ $caught = 1 ] || fail "SIG$s: the export never was seen writing"
	sleep 0.1
	! ls -a sig | grep -q '\.tmp-' || fail "SIG$s left $(ls sig)"
	[ ! -e sig/out.json ] || fail "SIG$s: a partial output was renamed into place"
done
echo "output rule: ok"
