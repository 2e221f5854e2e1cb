#!/bin/bash
# cw-test-timeout: 600
# Hostile databases (tests/hostile/hostile_db.py: invalid UTF-8 in every
# text column, INT64 extremes and negative times, NULLs, wrong types, huge
# strings, broken JSON, wrong user_version, missing tables, truncated and
# foreign files) through every reader: explain (--json and text), query
# (summary, SQL, table, CSV), export, merge, and the API of serve. Each run
# ends with exit 0 or one clean error, never a crash, a hang or a sanitizer
# report (the suite runs this again with the ASan/UBSan binary); JSON
# output parses, and where a value held bad bytes it shows U+FFFD instead of
# null or a dropped key.
# HOSTILE_LONG=1: one variant per column and value kind (bench-sized).
# To keep the suite's time, each binary runs a part and together they run
# every variant: the one built without sanitizers every third (the 1st,
# 4th, ...), the ASan/UBSan one, where a sanitizer report is the finding,
# the other two thirds; both run every invalid-UTF-8 one. HOSTILE_ALL=1
# runs them all (bench/long-suite.sh).
set -u
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI not installed"; exit 77; }
command -v curl >/dev/null || { echo "curl not installed"; exit 77; }
D=$(mktemp -d)
SP=
cleanup() { [ -n "$SP" ] && kill "$SP" 2>/dev/null; wait 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

"$CW_BIN" demo incident --db "$D/base.db" >/dev/null 2>&1 || fail "demo"
# Inference requests too, so each variant damages them as well.
python3 "$CW_ROOT/tests/fixtures/requests_db.py" "$D/base.db" >/dev/null || fail "requests"
python3 "$CW_ROOT/tests/hostile/hostile_db.py" "$D/base.db" "$D/v" ${HOSTILE_LONG:+--long} >"$D/list" ||
	fail "generator"
[ "$(wc -l <"$D/list")" -ge 20 ] || fail "too few variants: $(cat "$D/list")"
# A hang is what the per-command limit catches; the sanitizer binary runs
# about 6x slower (merge of a whole variant: ~15 s of CPU), so it gets more.
limit=60
grep -qa __asan_init "$CW_BIN" && limit=180
if [ -z "${HOSTILE_ALL:-}" ]; then
	if grep -qa __asan_init "$CW_BIN"; then
		awk -F'\t' 'NR % 3 != 1 || $1 ~ /utf8/' "$D/list" >"$D/list.some"
	else
		awk -F'\t' 'NR % 3 == 1 || $1 ~ /utf8/' "$D/list" >"$D/list.some"
	fi
	mv "$D/list.some" "$D/list"
fi
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$D/token"
tok=$(cat "$D/token")

# check NAME FLAGS WHAT RC: the run's stderr ($D/e) and stdout ($D/o).
check() {
	local n=$1 flags=$2 what=$3 rc=$4
	if grep -qE 'runtime error|Sanitizer|AddressSanitizer' "$D/e"; then
		fail "$n: $what: sanitizer report: $(grep -m3 -E 'runtime error|Sanitizer|SUMMARY' "$D/e")"
	fi
	[ "$rc" != 124 ] || fail "$n: $what: timed out"
	[ "$rc" -lt 128 ] || fail "$n: $what: killed by signal $((rc - 128))"
	case $rc in
	0) ;;
	1 | 2 | 6 | 7) # an error (7: a window that matches no data): said once, naming a cause
		if grep -q -- --json <<<"$what"; then
			python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["error"]; assert e and "Invalid argument" not in e, e' "$D/o" ||
				fail "$n: $what: exit $rc, error not clean: $(head -c 300 "$D/o")"
		else
			[ "$(grep -c '^causeway: ' "$D/e")" -ge 1 ] && ! grep -q 'Invalid argument' "$D/e" ||
				fail "$n: $what: exit $rc, error not clean: $(head -c 300 "$D/e")"
		fi
		return 1 ;;
	*) fail "$n: $what: exit $rc: $(head -c 300 "$D/e")" ;;
	esac
	return 0
}

json_ok() { # FILE NAME WHAT FLAGS: parses; with badutf8, U+FFFD (never a null) where bad bytes were
	python3 - "$@" <<'PY' || exit 1
import json, sys
f, n, what, flags = sys.argv[1:5]
try:
    doc = json.load(open(f, encoding="utf-8"))
except Exception as e:
    sys.exit("FAIL %s: %s: output is not valid UTF-8 JSON: %s" % (n, what, e))
if "badutf8" in flags and "want_fffd" in what and "\ufffd" not in json.dumps(doc, ensure_ascii=False):
    sys.exit("FAIL %s: %s: no U+FFFD in %s" % (n, what, json.dumps(doc)[:300]))
PY
}

text_ok() { # FILE NAME WHAT: text output is valid UTF-8 (U+FFFD where bytes were not)
	python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$1" 2>/dev/null ||
		fail "$2: $3: output is not valid UTF-8: $(head -c 300 "$1" | od -c | head -5)"
}

run_cli() { # NAME FLAGS WHAT ARGS...
	local n=$1 flags=$2 what=$3 rc
	shift 3
	timeout "$limit" "$CW_BIN" "$@" >"$D/o" 2>"$D/e"
	rc=$?
	if check "$n" "$flags" "$what" $rc; then
		if [ "${what#*json}" != "$what" ]; then
			json_ok "$D/o" "$n" "$what" "$flags"
		else
			text_ok "$D/o" "$n" "$what"
		fi
	fi
}

start_serve() { # DB
	: >"$D/serve.log"
	"$CW_BIN" serve --db "$1" --no-tls --listen 127.0.0.1:0 --token-file "$D/token" 2>"$D/serve.log" &
	SP=$!
	port=
	for _ in $(seq 1 200); do
		port=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$D/serve.log")
		[ -n "$port" ] && return 0
		kill -0 "$SP" 2>/dev/null || break
		sleep 0.05
	done
	wait "$SP"
	local rc=$?
	SP=
	cp "$D/serve.log" "$D/e"
	check "$1" "" "serve" $rc && fail "serve on $1 neither served nor failed: $(cat "$D/serve.log")"
	return 1
}

stop_serve() {
	kill "$SP" 2>/dev/null
	wait "$SP"
	local rc=$?
	SP=
	cp "$D/serve.log" "$D/e"
	[ $rc = 0 ] || [ $rc = 143 ] || check serve "" "serve exit" $rc
	grep -qE 'runtime error|Sanitizer' "$D/e" && fail "serve: $(grep -m3 -E 'runtime error|Sanitizer|SUMMARY' "$D/e")"
	return 0
}

# get NAME FLAGS PATH: any status but 500, an answer always, JSON bodies parse.
get() {
	local n=$1 flags=$2 path=$3 code rc
	code=$(curl -s --max-time 30 -o "$D/o" -w '%{http_code}' -H "Authorization: Bearer $tok" \
		"http://127.0.0.1:$port$path")
	rc=$?
	[ $rc = 0 ] || fail "$n: GET $path: no answer (curl $rc): $(tail -c 600 "$D/serve.log")"
	# 500 only for a database the server cannot read, said so.
	[ "$code" != 500 ] || grep -qE 'malformed|not a causeway database' "$D/o" ||
		fail "$n: GET $path: 500: $(head -c 300 "$D/o")"
	[ "$code" != 401 ] || fail "$n: GET $path: the token was refused"
	case $path in
	/metrics) ;;
	*) json_ok "$D/o" "$n" "GET $path${4:+ $4}" "$flags" ;;
	esac
}

I64MIN=-9223372036854775808 I64MAX=9223372036854775807
start=$SECONDS
while IFS=$'\t' read -r n flags; do
	db=$D/v/$n.db
	t0=$SECONDS
	run_cli "$n" "$flags" "explain --json" explain --no-store --json --db "$db"
	run_cli "$n" "$flags" "query --json" query --json --db "$db"
	run_cli "$n" "$flags" "query --json --group-by-line" query --json --group-by-line --db "$db"
	run_cli "$n" "$flags" "query --json sessions want_fffd" query --json --db "$db" "SELECT * FROM sessions"
	run_cli "$n" "$flags" "query table" query --db "$db" "SELECT * FROM call_threads LIMIT 5"
	run_cli "$n" "$flags" "query csv" query --csv --db "$db" "SELECT * FROM sessions"
	run_cli "$n" "$flags" "explain text" explain --no-store --stacks --db "$db"
	run_cli "$n" "$flags" "export" export --db "$db" -o "$D/out.json" --from 0 --to 4102444800 --max-events 2000 &&
		json_ok "$D/out.json" "$n" export "$flags"
	# merge copies every row: a few kinds of damage keep the run short.
	case $n in
	utf8_names | int_min | times_extreme | nulls | missing_* | user_version_* | truncated_* | garbage)
		rm -f "$D/m.db"
		run_cli "$n" "$flags" "merge" merge "$D/base.db" "$db" --force-node "$db=hostile" -o "$D/m.db" ;;
	esac
	start_serve "$db" || continue
	get "$n" "$flags" "/api/v1/overview" want_fffd
	for p in /api/v1/health /api/v1/chains /api/v1/ops "/api/v1/ops?by=line" /api/v1/ops/series \
		"/api/v1/ops/detail?op=cudaMalloc&source=cuda" "/api/v1/timeline?pid=4821&from=0&to=4102444800&limit=200" \
		"/api/v1/export/perfetto?from=0&to=4102444800&max_events=2000" /api/v1/gpu /api/v1/tenants /api/v1/nccl/ranks \
		"/api/v1/requests?limit=1000" "/api/v1/requests?order=recent&status=none" "/api/v1/query?sql=SELECT%20*%20FROM%20threads" /metrics; do
		get "$n" "$flags" "$p"
	done
	stop_serve
	echo "$n: $((SECONDS - t0))s"
done <"$D/list"

# Hostile numbers in the requests themselves, on an intact database.
start_serve "$D/base.db" || fail "serve base"
for p in "/api/v1/chains?from=$I64MIN&to=$I64MAX" "/api/v1/overview?from=$I64MIN&to=$I64MAX" \
	"/api/v1/ops/series?from=0&to=$I64MAX&points=$I64MAX" "/api/v1/timeline?tid=$I64MIN&from=$I64MIN&to=$I64MAX" \
	"/api/v1/timeline?pid=4821&from=$I64MAX&to=0" "/api/v1/ops?since=$I64MAX" "/api/v1/ops/detail?op=x&limit=$I64MIN" \
	"/api/v1/export/perfetto?from=$I64MIN&to=$I64MAX&max_events=$I64MAX" "/api/v1/query?sql=SELECT%201&max_rows=$I64MIN" \
	"/api/v1/requests?from=$I64MIN&to=$I64MAX&limit=$I64MIN" "/api/v1/requests?min_duration=99999999999d&pid=$I64MAX"; do
	get base "" "$p"
done
stop_serve
for a in "--from $I64MIN --to $I64MAX" "--from $I64MAX" "--since 99999999999d" "--from 0 --to 1e300"; do
	# shellcheck disable=SC2086
	run_cli base "" "explain --json $a" explain --no-store --json --db "$D/base.db" $a
	# shellcheck disable=SC2086
	run_cli base "" "export $a" export --db "$D/base.db" -o "$D/out.json" $a
done
echo "hostile databases ok: $(wc -l <"$D/list") variants in $((SECONDS - start))s"
