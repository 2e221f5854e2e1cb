#!/bin/bash
# bench/long-suite.sh [BUILD]: the suite's long forms, the checks that
# `make test` runs in a shorter form to stay near 20 minutes on 2 cores.
# Run as root on a quiet machine; ends with the suite's summary line.
#
#   - the aarch64 release's whole unit suite, cross-built as the release
#     file is and run under qemu-user (test_release_aarch64 with CW_LONG=1;
#     the suite's form checks the file and runs it in an arm64 root)
#   - every hostile-database variant with the ordinary binary as well
#     (HOSTILE_ALL=1, with both binaries; the suite splits them between the two)
#   - every golden test with the ASan/UBSan binary (CW_ASAN_ALL=1; the suite
#     runs only those that feed causeway hostile input, tests/golden/asan.list)
#   - every fuzz target for 60 s instead of the suite's 6 s
#   - the kernel matrix on Debian's arm64 kernels, trixie and sid, under
#     qemu-system-aarch64 (test_kernel_matrix_arm64 with CW_LONG=1; the
#     suite boots the x86-64 ones): the aarch64 release file and the
#     stand-in CUDA fixtures cross-built for it, tens of minutes each
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
cd "$ROOT" || exit 1
. tests/lib/kernel_vm.sh
NPROC=$(nproc 2>/dev/null || echo 1)
make --no-print-directory -j"$NPROC" BUILD="$BUILD" all unit fixtures release >/dev/null &&
	make --no-print-directory -j"$NPROC" asan >/dev/null || {
	echo "long-suite: build failed" >&2
	exit 1
}
start=$SECONDS
CW_LONG=1 HOSTILE_ALL=1 CW_NO_FUZZ=1 \
	CW_TEST_FILTER='^(integration/test_release_aarch64|golden/test_hostile_db)$' \
	scripts/run-tests.sh "$BUILD"
rc=$?
HOSTILE_ALL=1 CW_ASAN_ALL=1 CW_NO_FUZZ=1 CW_TEST_FILTER='^asan/golden/' scripts/run-tests.sh "$BUILD" build-asan || rc=1
scripts/build-fuzz.sh "$BUILD" --smoke 60 --jobs "$NPROC" || rc=1
scripts/install-test-kernels.sh $CW_KERNELS_ARM64 || rc=1
CW_LONG=1 CW_NO_FUZZ=1 CW_TEST_TIMEOUT=3600 CW_TEST_FILTER='^integration/test_kernel_matrix_arm64$' \
	scripts/run-tests.sh "$BUILD" || rc=1
echo "long-suite: $((SECONDS - start)) s"
exit $rc
