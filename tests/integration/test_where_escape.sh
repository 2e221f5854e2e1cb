#!/bin/bash
# causeway where's text shows a traced process's stored names escaped: a
# Python script whose path holds a right-to-left override (U+202E), a C1
# CSI (U+009B) and an escape byte is shown with "\u202e", "\u009b" and
# "^[", and none of those bytes reaches the terminal (util/term.h). The
# same for an error naming a path given by the user (util/log.c).
set -u
[ "$(id -u)" = 0 ] || { echo "needs root to read another process's memory"; exit 77; }
PY=/usr/bin/python3.11
[ -x "$PY" ] || { echo "FAIL: $PY missing (scripts/install-deps.sh)"; exit 1; }
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
name=$(printf 'evil\xe2\x80\xaegnp\xc2\x9b31m\x1b[2J.py')
printf 'import time\nprint("ready", flush=True)\ntime.sleep(60)\n' > "$tmp/$name"
"$PY" "$tmp/$name" > "$tmp/out" 2>&1 &
pid=$!
for _ in $(seq 1 100); do [ -s "$tmp/out" ] && break; sleep 0.05; done
[ -s "$tmp/out" ] || { echo "FAIL: the script did not start: $(cat "$tmp/out")"; exit 1; }
sleep 0.2
"$CW_BIN" where --no-native "$pid" > "$tmp/where" 2>&1 || { echo "FAIL: where exited $?: $(cat "$tmp/where")"; exit 1; }
python3 - "$tmp/where" <<'PY' || exit 1
import sys
raw = open(sys.argv[1], "rb").read()
text = raw.decode("utf-8", "replace")
frame = [l for l in text.split("\n") if "[py]" in l and "evil" in l]
assert frame, text
assert "evil\\u202egnp\\u009b31m^[[2J.py" in frame[0], frame[0]
assert b"\xe2\x80\xae" not in raw and b"\xc2\x9b" not in raw and b"\x1b" not in raw, raw
print("ok:", frame[0].strip())
PY
# An error that names the user's path.
"$CW_BIN" query --db "$tmp/$name.db" "SELECT 1" > "$tmp/q.out" 2> "$tmp/q.err" && { echo "FAIL: query of a missing db succeeded"; exit 1; }
python3 - "$tmp/q.err" <<'PY' || exit 1
import sys
raw = open(sys.argv[1], "rb").read()
assert b"evil\\u202egnp\\u009b31m^[[2J.py.db" in raw, raw
assert b"\xe2\x80\xae" not in raw and b"\xc2\x9b" not in raw and b"\x1b" not in raw, raw
print("ok:", raw.decode().strip())
PY
echo ok
