/* UTF-8 repair for everything emitted as JSON or text (utf8.h). A decoder
 * this small is written out rather than pulled from iconv, which can drop
 * invalid bytes but not substitute U+FFFD for them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

#define REPL "\xef\xbf\xbd"

size_t cw_utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (!n)
		return 0;
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		if (s[0] == 0xe0)
			lo = 0xa0; /* overlong */
		else if (s[0] == 0xed)
			hi = 0x9f; /* surrogates */
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		if (s[0] == 0xf0)
			lo = 0x90; /* overlong */
		else if (s[0] == 0xf4)
			hi = 0x8f; /* past U+10FFFF */
	} else {
		return 0;
	}
	for (i = 1; i < len; i++) {
		if (i >= n || s[i] < lo || s[i] > hi)
			return 0;
		lo = 0x80;
		hi = 0xbf;
	}
	return len;
}

/* Bytes of the maximal subpart of a sequence at s: the lead byte and the
 * continuation bytes that still fit it, so that one U+FFFD stands for them
 * (Unicode 15, §3.9, "U+FFFD Substitution of Maximal Subparts"). */
static size_t bad_len(const unsigned char *s, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, lo = s[0] == 0xe0 ? 0xa0 : 0x80, hi = s[0] == 0xed ? 0x9f : 0xbf;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, lo = s[0] == 0xf0 ? 0x90 : 0x80, hi = s[0] == 0xf4 ? 0x8f : 0xbf;
	else
		return 1;
	for (i = 1; i < len && i < n; i++) {
		if (s[i] < lo || s[i] > hi)
			break;
		lo = 0x80;
		hi = 0xbf;
	}
	return i;
}

int cw_utf8_valid(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, k;

	while (i < n) {
		if (u[i] < 0x80) {
			i++;
			continue;
		}
		if (!(k = cw_utf8_seq(u + i, n - i)))
			return 0;
		i += k;
	}
	return 1;
}

char *cw_utf8_fix(const char *s, size_t n, size_t *out_len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, o = 0, k;
	char *d;

	/* Each bad byte grows to at most three: no overflow below SIZE_MAX / 3. */
	if (n > (SIZE_MAX - 1) / 3 || !(d = malloc(n * 3 + 1)))
		return NULL;
	while (i < n) {
		if ((k = cw_utf8_seq(u + i, n - i))) {
			memcpy(d + o, u + i, k);
			o += k;
			i += k;
			continue;
		}
		memcpy(d + o, REPL, 3);
		o += 3;
		i += bad_len(u + i, n - i);
	}
	d[o] = '\0';
	if (out_len)
		*out_len = o;
	return d;
}

json_t *cw_json_strn(const char *s, size_t n)
{
	json_t *j;
	size_t m;
	char *c;

	if (!s)
		return json_null();
	if (cw_utf8_valid(s, n))
		return json_stringn(s, n);
	if (!(c = cw_utf8_fix(s, n, &m)))
		return NULL;
	j = json_stringn(c, m);
	free(c);
	return j;
}

json_t *cw_json_str(const char *s)
{
	return s ? cw_json_strn(s, strlen(s)) : json_null();
}

json_t *cw_json_strcap(const char *s, size_t max)
{
	static const char ell[] = "\xe2\x80\xa6";
	size_t n, m, cut;
	json_t *j;
	char *c;

	if (!s)
		return json_null();
	n = strnlen(s, max + 1);
	if (n <= max)
		return cw_json_strn(s, n);
	/* Repair first, so the cut counts what is shown; then back off to the
	 * start of a character. */
	if (!(c = cw_utf8_fix(s, n, &m)))
		return NULL;
	cut = max < m ? max : m;
	cut = cut > sizeof(ell) - 1 ? cut - (sizeof(ell) - 1) : 0;
	while (cut && ((unsigned char)c[cut] & 0xc0) == 0x80)
		cut--;
	memcpy(c + cut, ell, sizeof(ell));
	j = json_string(c);
	free(c);
	return j;
}

int cw_json_set(json_t *o, const char *key, json_t *v)
{
	size_t n = strlen(key);
	char *c;
	int rc;

	if (cw_utf8_valid(key, n))
		return json_object_set_new(o, key, v);
	if (!(c = cw_utf8_fix(key, n, NULL))) {
		json_decref(v);
		return -1;
	}
	rc = json_object_set_new(o, c, v);
	free(c);
	return rc;
}
