#!/bin/bash
# release-check.sh FILE [MACHINE]: a release file needs nothing beyond glibc.
# Fails (exit 1, one line per finding) when FILE
#  - names a shared library other than glibc's own (libc, libm, libdl,
#    libpthread, librt and the loader) in NEEDED,
#  - requires a symbol version newer than GLIBC_2.34 (Ubuntu 22.04's and
#    RHEL 9's glibc) or any other library's versions (GLIBCXX, CXXABI,
#    OPENSSL, ...),
#  - has an ELF machine other than MACHINE (readelf's words: X86-64, AArch64).
# Prints "NEEDED: ..." and "highest: GLIBC_x.y" on success. readelf reads
# any architecture's ELF, so this checks cross-built files too.
set -u
f=$1 want=${2:-}
MAX=2.34
[ -f "$f" ] || { echo "release-check: no file '$f'"; exit 1; }
bad=0
machine=$(readelf -h "$f" | sed -n 's/^ *Machine: *//p')
if [ -n "$want" ] && [[ $machine != *"$want"* ]]; then
	echo "release-check: $f is for '$machine', not $want"
	bad=1
fi
needed=$(readelf -dW "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
[ -n "$needed" ] || { echo "release-check: $f has no NEEDED entries (not a dynamic executable?)"; bad=1; }
for n in $needed; do
	case $n in
	libc.so.6 | libm.so.6 | libdl.so.2 | libpthread.so.0 | librt.so.1 | ld-linux*.so.*) ;;
	*) echo "release-check: $f needs '$n'"; bad=1 ;;
	esac
done
# Version needs (.gnu.version_r): every "Name:" a file requires.
versions=$(readelf -VW "$f" | sed -n '/\.gnu\.version_r/,$s/.*Name: \([^ ]*\).*/\1/p' | sort -uV)
[ -n "$versions" ] || { echo "release-check: $f requires no symbol versions (readelf -V read nothing)"; bad=1; }
highest=
for v in $versions; do
	case $v in
	GLIBC_PRIVATE) echo "release-check: $f uses GLIBC_PRIVATE symbols"; bad=1 ;;
	GLIBC_[0-9]*)
		n=${v#GLIBC_}
		if [ "$(printf '%s\n%s\n' "$n" "$MAX" | sort -V | tail -n 1)" != "$MAX" ]; then
			echo "release-check: $f requires $v (newer than GLIBC_$MAX)"
			bad=1
		fi
		;;
	*) echo "release-check: $f requires '$v' (not glibc)"; bad=1 ;;
	esac
done
# The highest GLIBC_ version, by version order.
highest=$(printf '%s\n' $versions | grep '^GLIBC_[0-9]' | sort -V | tail -n 1)
if [ $bad = 0 ]; then
	echo "NEEDED: $(echo $needed)"
	echo "highest: $highest"
fi
exit $bad
