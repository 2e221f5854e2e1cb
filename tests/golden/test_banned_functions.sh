#!/bin/bash
# banned functions: src/util/banned.h is force-included into every product
# source (the Makefile's BANNED), so a call of sprintf, strcpy, atoi and the
# others fails to compile, while the safe replacements and the system
# headers (fortified) still compile after it.
set -u
fail() { echo "FAIL: $*"; exit 1; }
cd "$CW_ROOT" || fail "no CW_ROOT"
banned=$(sed -n 's/^BANNED := //p' Makefile)
[ "$banned" = "-include util/banned.h" ] || fail "Makefile: BANNED is \"$banned\""
grep -q '^	@$(CC) $(CFLAGS) $(BANNED) -c -o $@ $<$' Makefile || fail "Makefile: product objects built without \$(BANNED)"
cc=${CC:-cc}
flags="-std=gnu11 -O2 -D_FORTIFY_SOURCE=2 -Wall -Wextra -Werror -Isrc $banned -fsyntax-only -x c -"
ok='#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
int f(char *b, size_t n, const char *s, time_t t)
{
	struct tm tm;
	char *save;

	snprintf(b, n, "%s", s);
	gmtime_r(&t, &tm);
	localtime_r(&t, &tm);
	return (int)strtol(s, NULL, 10) + (strtok_r(b, ",", &save) != NULL);
}'
echo "$ok" | $cc $flags || fail "a file using only the replacements does not compile"
for call in 'sprintf(b, "x")' 'strcpy(b, s)' 'strcat(b, s)' 'strncpy(b, s, 1)' 'strncat(b, s, 1)' 'atoi(s)' \
	'atol(s)' 'atoll(s)' 'gmtime(&t)' 'localtime(&t)' 'ctime(&t)' 'asctime(gmtime_r(&t, &tm))' 'strtok(b, s)'; do
	fn=${call%%(*}
	src="#include <string.h>
#include <stdlib.h>
#include <stdio.h>
#include <time.h>
void g(char *b, const char *s, time_t t)
{
	struct tm tm;

	(void)tm;
	(void)($call);
}"
	err=$(echo "$src" | $cc $flags 2>&1) && fail "$fn compiles"
	echo "$err" | grep -q "sorry_${fn}_is_a_banned_function" || fail "$fn: $err"
done
echo "banned functions ok"
