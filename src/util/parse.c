#include "util/parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static size_t digits(const char *s)
{
	size_t n = 0;

	while (s[n] >= '0' && s[n] <= '9')
		n++;
	return n;
}

int cw_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	size_t n;

	if (!s || !(n = digits(s)) || s[n])
		return -EINVAL;
	errno = 0;
	v = strtoull(s, NULL, 10);
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

size_t cw_real_span(const char *s)
{
	size_t i = digits(s), f = 0, e;

	if (s[i] == '.')
		f = digits(s + i + 1), i += 1 + f;
	if (i == 0 || (i == 1 && s[0] == '.'))
		return 0; /* no digit before or after the point */
	if (s[i] == 'e' || s[i] == 'E') {
		e = i + 1;
		if (s[e] == '+' || s[e] == '-')
			e++;
		if (digits(s + e))
			i = e + digits(s + e);
	}
	return i;
}

int cw_parse_real(const char *s, double min, double max, double *out)
{
	size_t n;
	double v;

	if (!s || !(n = cw_real_span(s)) || s[n])
		return -EINVAL;
	errno = 0;
	v = strtod(s, NULL);
	/* ERANGE: overflow to HUGE_VAL, or underflow, which is out of any
	 * range a user means even when min is 0. */
	if (errno == ERANGE || !isfinite(v) || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int cw_parse_uint_list(const char *s, uint64_t min, uint64_t max, uint64_t *out, int cap)
{
	char one[24];
	int n = 0, rc;

	if (!s || !*s)
		return -EINVAL;
	for (;;) {
		size_t len = strcspn(s, ",");

		if (!len || len >= sizeof(one))
			return -EINVAL;
		if (n == cap)
			return -E2BIG;
		memcpy(one, s, len);
		one[len] = 0;
		if ((rc = cw_parse_uint(one, min, max, &out[n])))
			return rc;
		n++;
		if (!s[len])
			return n;
		s += len + 1; /* past the comma: "1," ends on an empty element */
	}
}

const char *cw_shown(const char *s, char *buf)
{
	size_t i;

	if (!s)
		s = "";
	for (i = 0; s[i] && i < CW_SHOWN_MAX; i++)
		buf[i] = isprint((unsigned char)s[i]) ? s[i] : '?';
	if (s[i])
		memcpy(buf + i, "...", 3), i += 3;
	buf[i] = 0;
	return buf;
}

int cw_parse_scaled(const char *s, const struct cw_unit *units, size_t nunits, int spaces, double *out)
{
	const char *end;
	double v;
	size_t i, n;

	/* The number as cw_parse_real takes it (no sign, hex, inf or nan). */
	if (!s || !(n = cw_real_span(s)))
		return -EINVAL;
	errno = 0;
	v = strtod(s, NULL);
	if (errno == ERANGE || !isfinite(v))
		return -ERANGE;
	for (end = s + n; spaces && *end == ' ';)
		end++;
	for (i = 0; i < nunits; i++) {
		if (!strcmp(end, units[i].suffix)) {
			*out = v * (double)units[i].mult;
			return 0;
		}
	}
	return -EINVAL;
}
