#!/bin/sh
# embed.sh SYMBOL FILE: prints a C file defining `const char SYMBOL[]` with
# FILE's bytes and a terminating NUL, so the binary carries its own schema.
set -eu
sym=$1 file=$2
printf '/* generated from %s by scripts/embed.sh; do not edit */\n' "$file"
printf 'const char %s[] = {\n' "$sym"
od -An -v -tx1 "$file" | sed 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'
printf '0x00 };\n'
