#!/bin/bash
# Builds every tests/fuzz/fuzz_*.c as a libFuzzer binary with clang
# (ASan + UBSan), linked against the product sources compiled the same way.
#   scripts/build-fuzz.sh [BUILD] [--smoke [SECONDS]] [--jobs N]
# --smoke runs each fuzzer for SECONDS (default 10) over its seed corpus
# tests/fuzz/corpus/<fuzzer>/ (copied, so the committed seeds stay as they
# are), N fuzzers at a time (default 1; each is one process, so N up to the
# CPU count gives every one its SECONDS of a whole CPU), and exits non-zero
# when any of them finds a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build
SMOKE=0
SECS=10
JOBS=1
while [ $# -gt 0 ]; do
	case "$1" in
	--smoke) SMOKE=1; if [[ ${2:-} =~ ^[0-9]+$ ]]; then SECS=$2; shift; fi ;;
	--jobs) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "build-fuzz: --jobs needs a number" >&2; exit 2; }
		JOBS=$2; shift ;;
	-h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) BUILD=$1 ;;
	esac
	shift
done
CLANG=${CLANG:-clang}
command -v "$CLANG" >/dev/null || { echo "build-fuzz: clang not found" >&2; exit 1; }
OUT=$BUILD/fuzz
# The generated sources (schema, web assets, BPF skeletons) come from the
# normal build's rules; the product itself is not needed.
gen="$BUILD/gen/schema_sql.c $BUILD/gen/web_assets.c $BUILD/gen/mcp_schema_md.c $BUILD/gen/mcp_rules_md.c"
for b in src/bpf/*.bpf.c; do gen="$gen $BUILD/gen/$(basename "$b" .bpf.c).skel.h"; done
# shellcheck disable=SC2086
make --no-print-directory BUILD="$BUILD" $gen >/dev/null
PKGS="sqlite3 jansson libbpf libelf libdw zlib yaml-0.1 libmicrohttpd gnutls libcurl liblzma"
FLAGS="-std=gnu11 -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all \
 -Isrc -I$BUILD/gen $(pkg-config --cflags $PKGS) -DCW_VERSION=\"fuzz\" -DCW_COMMIT=\"fuzz\" -w"
LIBS="$(pkg-config --libs $PKGS) -lpthread -lm -ldl -lstdc++"
mkdir -p "$OUT/obj"
srcs=$(find src -name '*.c' -not -name '*.bpf.c' -not -path src/main.c | sort)
srcs="$srcs $BUILD/gen/schema_sql.c $BUILD/gen/web_assets.c $BUILD/gen/mcp_schema_md.c $BUILD/gen/mcp_rules_md.c"
# Compile (only what changed), two at a time.
export CLANG FLAGS OUT
printf '%s\n' $srcs | xargs -P2 -I{} sh -c '
	o="$OUT/obj/$(echo "{}" | tr / _).o"
	if [ ! -f "$o" ] || [ "{}" -nt "$o" ]; then
		$CLANG $FLAGS -fsanitize=fuzzer-no-link -c "{}" -o "$o" || exit 255
	fi'
rm -f "$OUT/libcauseway-fuzz.a"
ar rcs "$OUT/libcauseway-fuzz.a" "$OUT"/obj/*.o
fail=0
# Link (each link is one process), two at a time.
export LIBS
printf '%s\n' tests/fuzz/fuzz_*.c | xargs -P2 -I{} sh -c '
	name=$(basename "{}" .c)
	$CLANG $FLAGS -fsanitize=fuzzer "{}" "$OUT/libcauseway-fuzz.a" $LIBS -o "$OUT/$name" || exit 255
	echo "built $OUT/$name"'
[ "$SMOKE" = 1 ] || exit 0
smoke() { # NAME: one fuzzer's run; prints its one result line
	local name=$1 work
	work=$(mktemp -d)
	[ -d "tests/fuzz/corpus/$name" ] && cp -r "tests/fuzz/corpus/$name/." "$work/"
	if "$OUT/$name" -max_total_time="$SECS" -max_len=65536 -print_final_stats=1 -artifact_prefix="$OUT/$name-" "$work" \
		>"$OUT/$name.log" 2>&1; then
		echo "ok    $name ($(grep -o 'stat::number_of_executed_units: [0-9]*' "$OUT/$name.log" | awk '{print $2}') runs)"
	else
		echo "FAIL  $name: see $OUT/$name.log"; tail -20 "$OUT/$name.log"
	fi
	rm -rf "$work"
}
# Each result goes to its own file (a line starting "ok" or "FAIL"),
# printed in the targets' order once all are done.
names=()
for f in tests/fuzz/fuzz_*.c; do
	while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
	name=$(basename "$f" .c)
	names+=("$name")
	smoke "$name" >"$OUT/$name.result" 2>&1 &
done
wait
for name in "${names[@]}"; do
	cat "$OUT/$name.result"
	grep -q '^ok ' "$OUT/$name.result" || fail=1
done
exit $fail
