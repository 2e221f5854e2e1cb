#!/bin/bash
# cw-test-timeout: 900
# The kernel matrix on Debian's trixie and sid arm64 cloud kernels under
# qemu-system-aarch64 (minutes each under emulation): the long form only
# (bench/long-suite.sh sets CW_LONG=1); make test runs the x86-64 kernels.
[ "${CW_LONG:-0}" = 1 ] || { echo "arm64 kernels: the long form only (bench/long-suite.sh)"; exit 77; }
rc=0
for suite in trixie sid; do
	(. "$CW_ROOT/tests/integration/kernel_matrix_lib.sh"; kernel_matrix "$suite" arm64) || rc=1
done
exit $rc
