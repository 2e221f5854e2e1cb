#!/bin/bash
# Builds every tests/fuzz/fuzz_*.c as a libFuzzer binary with clang
# (ASan + UBSan), linked against the product sources compiled the same way.
#   scripts/build-fuzz.sh [BUILD] [--smoke [SECONDS]]
# --smoke runs each fuzzer for SECONDS (default 10) over its seed corpus
# tests/fuzz/corpus/<fuzzer>/ (copied, so the committed seeds stay as they
# are) and exits non-zero when any of them finds a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build
SMOKE=0
SECS=10
while [ $# -gt 0 ]; do
	case "$1" in
	--smoke) SMOKE=1; if [[ ${2:-} =~ ^[0-9]+$ ]]; then SECS=$2; shift; fi ;;
	-h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
for f in tests/fuzz/fuzz_*.c; do
	name=$(basename "$f" .c)
	# shellcheck disable=SC2086
	$CLANG $FLAGS -fsanitize=fuzzer "$f" "$OUT/libcauseway-fuzz.a" $LIBS -o "$OUT/$name"
	echo "built $OUT/$name"
done
[ "$SMOKE" = 1 ] || exit 0
for f in tests/fuzz/fuzz_*.c; do
	name=$(basename "$f" .c)
	work=$(mktemp -d)
	[ -d "tests/fuzz/corpus/$name" ] && cp -r "tests/fuzz/corpus/$name/." "$work/"
	if "$OUT/$name" -max_total_time="$SECS" -max_len=65536 -print_final_stats=1 -artifact_prefix="$OUT/$name-" "$work" \
		>"$OUT/$name.log" 2>&1; then
		echo "ok    $name ($(grep -o 'stat::number_of_executed_units: [0-9]*' "$OUT/$name.log" | awk '{print $2}') runs)"
	else
		echo "FAIL  $name: see $OUT/$name.log"; tail -20 "$OUT/$name.log"; fail=1
	fi
	rm -rf "$work"
done
exit $fail
