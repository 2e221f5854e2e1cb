#!/bin/bash
# cw-test-timeout: 600
# The kernel matrix on Debian's bullseye x86-64 cloud kernel
# (tests/integration/kernel_matrix_lib.sh; docs/kernels.md, "Tested kernels").
. "$CW_ROOT/tests/integration/kernel_matrix_lib.sh"
kernel_matrix bullseye amd64
