#!/bin/bash
# progress.sh BUILD DB [EXPORT_MAX_EVENTS]: wall time of explain and export
# on a large store, and the progress line they draw on a terminal (a
# pseudo-terminal from script(1)): when it first appeared, how often it was
# redrawn, its last reading, and that the terminal is left clean. Also the
# same commands with stderr in a file: no progress there. DB is read only
# (explain --no-store); build one with bench/bigdb_bench (explain_latency.sh
# caches it in /tmp/cw-bench). The export goes to a temporary file.
set -eu
BUILD=${1:?BUILD}
DB=${2:?DB}
MAX=${3:-500000}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
echo "database: $DB ($(du -h "$DB" | cut -f1), $(sqlite3 "file:$DB?mode=ro" 'SELECT count(*) FROM events') events)"
for cmd in "explain --no-store" "export --max-events $MAX -o $T/t.json"; do
	s=$(date +%s%N)
	script -qec "'$BUILD/causeway' $cmd --db '$DB' >/dev/null" /dev/null >"$T/tty" </dev/null
	e=$(date +%s%N)
	python3 - "$T/tty" "$(( (e - s) / 1000000 ))" "$cmd" <<'PY'
import re, sys
raw = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
draws = re.findall(r"\r\x1b\[Kcauseway: [a-z]+: ([^\r]*?) \.\.\. ([0-9.]+) s([^\r\x1b]*)", raw)
cleared = raw.count("\r\x1b[K") == len(draws) + (1 if draws else 0)
first = draws[0][1] if draws else "-"
last = (draws[-1][1] + draws[-1][2]) if draws else "-"
print(f"{sys.argv[3].split(' -o')[0]:<34} wall {int(sys.argv[2]) / 1000:6.1f} s   "
      f"progress: first at {first} s, {len(draws)} redraws, last '{last.strip()}', cleared {'yes' if cleared else 'NO'}")
PY
	"$BUILD/causeway" $cmd --db "$DB" >/dev/null 2>"$T/err" || true
	if grep -q $'\r' "$T/err"; then echo "  stderr in a file: PROGRESS LINE PRESENT"; else echo "  stderr in a file: no progress line"; fi
done
