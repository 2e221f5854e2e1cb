#!/bin/bash
# cw-test-timeout: 600
# The kernel matrix on Debian's bullseye x86-64 cloud kernel
# (tests/integration/kernel_matrix_lib.sh; docs/kernels.md, "Tested kernels").
# 5.10 cannot trace yet (no attach cookies, task_btf helper or BPF
# compare-and-swap: docs/kernels.md): judged as unsupported, check must say
# so and every trace must refuse cleanly, in one causeway line. When 5.10 is
# supported, drop CW_MATRIX_UNSUPPORTED and it is judged like the others.
. "$CW_ROOT/tests/integration/kernel_matrix_lib.sh"
CW_MATRIX_UNSUPPORTED=1 kernel_matrix bullseye amd64
