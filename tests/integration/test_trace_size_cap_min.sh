#!/bin/bash
# A cap below what the store needs is refused before any probe loads, with
# the least that works. (The footprint under a flood of calls:
# test_trace_size_cap_flood.sh; the writer's bound: test_size_cap_footprint.)
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FIX=$CW_BUILD/fixtures
[ -x "$FIX/fake_workload" ] && [ -f "$FIX/fakecuda/libcudart.so.13" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
D=$(mktemp -d)
sp=
cleanup() { [ -n "$sp" ] && kill "$sp" 2>/dev/null && wait "$sp" 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
CAP=$((2 << 20))

# 1. Too small: refused, naming the least cap, and nothing traced.
"$CW_BIN" trace --db "$D/small.db" --no-view --size-cap 1KiB -- true >"$D/small.out" 2>&1
rc=$?
[ $rc = 6 ] || fail "--size-cap 1KiB: exit $rc: $(cat "$D/small.out")"
grep -Eq '^causeway: size cap 1 KiB is below what the store needs: at least [0-9.]+ (KiB|MiB)' "$D/small.out" ||
	fail "--size-cap 1KiB: $(cat "$D/small.out")"
grep -q 'probes attached' "$D/small.out" && fail "--size-cap 1KiB traced: $(cat "$D/small.out")"
echo "--size-cap 1KiB refused before any probe loaded: $(head -1 "$D/small.out")"
