/* Functions causeway does not call, as git does (git's banned.h): each
 * overflows a buffer, hides a parse error or shares static state between
 * threads. The build force-includes this header into every product source
 * (the Makefile's BANNED), so a use fails to compile wherever it is:
 *   sprintf, vsprintf, strcpy, strcat   -> snprintf, vsnprintf, strbuf
 *   strncpy, strncat                    -> snprintf, or cw_copy_padded for
 *                                          fixed NUL-padded record fields
 *   atoi, atol, atoll                   -> cw_parse_uint (util/parse.h), or
 *                                          strtol with its end checked
 *   gmtime, localtime, ctime, asctime   -> gmtime_r, localtime_r, strftime
 *   strtok                              -> strtok_r, strchr
 *
 * Being first in every file, it also sets _GNU_SOURCE (the feature set most
 * files ask for; the same empty definition, so theirs is no redefinition)
 * and includes the headers that declare these functions before the macros
 * below, so their declarations and _FORTIFY_SOURCE wrappers stay intact. */
#ifndef CW_UTIL_BANNED_H
#define CW_UTIL_BANNED_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BANNED(func) sorry_##func##_is_a_banned_function

#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) BANNED(strncpy)
#undef strncat
#define strncat(x, y, n) BANNED(strncat)

#undef atoi
#define atoi(x) BANNED(atoi)
#undef atol
#define atol(x) BANNED(atol)
#undef atoll
#define atoll(x) BANNED(atoll)

#undef gmtime
#define gmtime(t) BANNED(gmtime)
#undef localtime
#define localtime(t) BANNED(localtime)
#undef ctime
#define ctime(t) BANNED(ctime)
#undef ctime_r
#define ctime_r(t, buf) BANNED(ctime_r)
#undef asctime
#define asctime(t) BANNED(asctime)
#undef asctime_r
#define asctime_r(t, buf) BANNED(asctime_r)

#undef strtok
#define strtok(s, delim) BANNED(strtok)

#endif
