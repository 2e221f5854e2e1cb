#!/bin/bash
# mutate.sh [BUILD] [MODULE...]: the mutation pass (scripts/mutate.sh) over
# every list in scripts/mutations/, timed, with its report kept in
# build-mutate/report.txt. BUILD is ignored (the mutants build in
# build-mutate/, incrementally); it is accepted so that run-all.sh can
# call every bench script the same way. Not part of the test suite: the
# suite only checks that the lists parse (tests/golden/test_mutation_lists.sh).
set -u
cd "$(dirname "$0")/.."
[ $# -gt 0 ] && [ -d "$1" ] && shift
mkdir -p build-mutate
start=$(date +%s)
scripts/mutate.sh "$@" 2>&1 | tee build-mutate/report.txt
rc=${PIPESTATUS[0]}
echo "bench/mutate.sh: $(($(date +%s) - start)) s wall, $(nproc) CPUs, exit $rc"
exit "$rc"
