#!/bin/bash
# run-all.sh BUILD: runs every benchmark in turn (see bench/README.md).
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
make --no-print-directory BUILD="$BUILD" bench-bins
echo "== ingest"; "$BUILD"/bench/ingest_bench 1000000 5
for s in bench/*.sh; do
	case $s in bench/run-all.sh | bench/bpftrace_lib.sh) continue ;; esac
	echo "== $s"; bash "$s" "$BUILD"
done
