/* Text from a trace is hostile: a kernel name, an argv or a comm may hold
 * any bytes. JSON must be UTF-8 and jansson refuses anything else (a NULL
 * string, a pack that fails, a key that silently is not set), so every
 * emitter passes database text through here: invalid sequences become
 * U+FFFD, never null, never a dropped key. */
#ifndef CW_UTIL_UTF8_H
#define CW_UTIL_UTF8_H

#include <jansson.h>
#include <stddef.h>

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 when the
 * bytes there do not start one (RFC 3629: no overlongs, no surrogates,
 * nothing past U+10FFFF). */
size_t cw_utf8_seq(const unsigned char *s, size_t n);
/* 1 when s[0..n) is valid UTF-8. */
int cw_utf8_valid(const char *s, size_t n);
/* A malloc'd, NUL-terminated copy of s[0..n) with each maximal invalid
 * subpart replaced by U+FFFD (as the WHATWG decoder does); *out_len gets
 * its length when out_len is set. NULL on ENOMEM. */
char *cw_utf8_fix(const char *s, size_t n, size_t *out_len);
/* A JSON string of s (NUL-terminated), repaired; json_null() for NULL. */
json_t *cw_json_str(const char *s);
/* The same for s[0..n), which may hold NUL bytes. */
json_t *cw_json_strn(const char *s, size_t n);
/* The same, cut to at most max bytes of the repaired text (at a character
 * boundary, "\u2026" marking the cut): a hostile 1 MiB name repeated in every
 * event must not make an export a thousand times its database. */
json_t *cw_json_strcap(const char *s, size_t max);
/* json_object_set_new with a repaired key (the value is stolen as there). */
int cw_json_set(json_t *o, const char *key, json_t *v);

#endif
