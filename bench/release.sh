#!/bin/bash
# bench/release.sh [N]: the release files (make release): size as built (with
# debug info) and stripped, and the start-up time of `check` (median and worst
# of N runs, default 21) for the x86-64 release file against the ordinary
# build/causeway (dynamically linked), both natively, and for the aarch64 file
# under qemu-user (emulated: a ratio, not a figure for arm64 hardware).
set -eu
N=${1:-21}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
make -s release >/dev/null
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
printf '| file | size | stripped |\n|---|---:|---:|\n'
for a in x86_64 aarch64; do
	f=build/release/causeway-linux-$a
	strip_=strip
	[ $a = aarch64 ] && strip_=aarch64-linux-gnu-strip
	$strip_ -o "$T/s" "$f"
	printf '| %s | %.1f MiB | %.1f MiB |\n' "$(basename "$f")" \
		"$(echo "$(stat -c %s "$f") / 1048576" | bc -l)" "$(echo "$(stat -c %s "$T/s") / 1048576" | bc -l)"
done
# run_ms BIN: median and worst wall time of N `BIN check` runs, in ms.
run_ms() {
	local i t0 t1
	for i in $(seq 1 "$N"); do
		t0=$(date +%s%N)
		"$@" check >/dev/null 2>&1 || true
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000))
	done | sort -n | awk '{ a[NR] = $1 } END { printf "%.1f ms | %.1f ms", a[int((NR + 1) / 2)] / 1000, a[NR] / 1000 }'
}
printf '\n| check start-up (%d runs) | median | worst |\n|---|---:|---:|\n' "$N"
printf '| build/causeway (shared libraries) | %s |\n' "$(run_ms build/causeway)"
printf '| causeway-linux-x86_64 | %s |\n' "$(run_ms build/release/causeway-linux-x86_64)"
printf '| causeway-linux-aarch64 (qemu-user) | %s |\n' "$(run_ms build/release/causeway-linux-aarch64)"
