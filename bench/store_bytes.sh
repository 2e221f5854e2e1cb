#!/bin/bash
# store_bytes.sh BUILD [DB...]: on-disk bytes per stored event of schema v7
# databases, from SQLite's dbstat (pages of each table and index): the
# events' own tables and indexes (calls, calls_slow, call_threads and its
# indexes, call_ops, strings, kevents and its indexes) per event, the calls
# table with its index per call, and the whole file per event. Without DB
# arguments, every demo scenario is generated into a temporary directory.
set -eu
BUILD=${1:-build}
shift || true
DBS=("$@")
T=
if [ ${#DBS[@]} -eq 0 ]; then
	T=$(mktemp -d /tmp/cw-store-bytes-XXXXXX)
	trap 'rm -rf "$T"' EXIT
	for s in $("$BUILD"/causeway demo --list | awk '{print $1}'); do
		"$BUILD"/causeway demo "$s" --db "$T/$s.db" >/dev/null
		DBS+=("$T/$s.db")
	done
fi
printf '%-40s %10s %12s %12s %10s\n' database events "events B/ev" "calls B/call" "file B/ev"
for db in "${DBS[@]}"; do
	sqlite3 "$db" "SELECT
	  (SELECT count(*) FROM calls) + (SELECT count(*) FROM kevents),
	  (SELECT sum(pgsize) FROM dbstat WHERE name IN ('calls', 'calls_slow', 'call_threads', 'call_threads_tid',
	   'call_threads_pid', 'call_ops', 'sqlite_autoindex_call_ops_1', 'strings', 'sqlite_autoindex_strings_1',
	   'kevents', 'events_slow', 'events_io', 'events_retx', 'events_oom', 'events_pagealloc')),
	  (SELECT count(*) FROM calls),
	  (SELECT sum(pgsize) FROM dbstat WHERE name IN ('calls', 'calls_slow')),
	  (SELECT page_count * page_size FROM pragma_page_count, pragma_page_size)" |
		awk -F'|' -v n="$(basename "$db")" '{printf "%-40s %10d %12.1f %12.1f %10.1f\n", n, $1, $2 / $1, $4 / $3, $5 / $1}'
done
