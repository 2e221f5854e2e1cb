#!/bin/bash
# version: causeway's version and commit, build date, and the versions of
# the libraries it runs with, in text and JSON.
set -u
fail() { echo "FAIL: $*"; exit 1; }
out=$("$CW_BIN" version) || fail "version exited $?"
echo "$out" | head -n 1 | grep -Eq '^causeway [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]+|unknown), built [0-9]{4}-[0-9]{2}-[0-9]{2}T' || fail "first line: $out"
for lib in libbpf sqlite jansson libmicrohttpd gnutls libcurl libyaml kernel; do
	echo "$out" | grep -Eq "^  $lib +[0-9A-Za-z]" || fail "no $lib line"
done
[ "$("$CW_BIN" --version | head -n 1)" = "$(echo "$out" | head -n 1)" ] || fail "--version differs"
"$CW_BIN" version --json | python3 -c '
import json, os, sys, sqlite3
v = json.load(sys.stdin)
assert v["version"] and v["commit"] and len(v["build_date"]) >= 19, v
libs = v["libraries"]
assert set(libs) == {"libbpf", "sqlite", "jansson", "libmicrohttpd", "gnutls", "libcurl", "libyaml"}, libs
# Python links the same system SQLite: the run-time version must match.
assert libs["sqlite"] == sqlite3.sqlite_version, (libs["sqlite"], sqlite3.sqlite_version)
assert libs["libbpf"].count(".") == 1 and libs["libbpf"].split(".")[0].isdigit(), libs
assert v["kernel"]["release"] == os.uname().release, v["kernel"]
' || fail "json"
"$CW_BIN" version --help | grep -q '^usage: causeway version' || fail "--help"
"$CW_BIN" version extra 2>/dev/null; [ $? = 2 ] || fail "extra argument accepted"
echo "version ok"
