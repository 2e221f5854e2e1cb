/* inference/prom_parse.c: the sample lines of a Prometheus text
 * exposition (prom_parse.h). A sample line is
 *   name [{label="value",...}] value [timestamp] [# exemplar]
 * with blanks (spaces, tabs) between the parts. Each line is parsed
 * within its own bounds: nothing reads past its end, and a malformed
 * line costs its own length once. */
#include "inference/prom_parse.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static const char *skip_blanks(const char *p, const char *e)
{
	while (p < e && is_blank(*p))
		p++;
	return p;
}

static int name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static int name_char(char c)
{
	return name_start(c) || (c >= '0' && c <= '9');
}

/* Past "{...}" at p ('{'), or NULL when the label set is malformed.
 * Label values may hold any byte but an unescaped quote; a backslash
 * escapes the byte after it (\" \\ \n), so a quote or comma inside a
 * value ends nothing. */
static const char *skip_labels(const char *p, const char *e)
{
	p++;
	for (;;) {
		p = skip_blanks(p, e);
		if (p < e && *p == '}')
			return p + 1;
		if (p >= e || !name_start(*p))
			return NULL;
		while (p < e && name_char(*p))
			p++;
		p = skip_blanks(p, e);
		if (p >= e || *p != '=')
			return NULL;
		p = skip_blanks(p + 1, e);
		if (p >= e || *p != '"')
			return NULL;
		for (p++; p < e && *p != '"'; p++)
			if (*p == '\\' && ++p >= e)
				return NULL;
		if (p >= e)
			return NULL;
		p = skip_blanks(p + 1, e);
		if (p < e && *p == ',')
			p++;
		else if (p >= e || *p != '}')
			return NULL;
	}
}

/* The value token p[0..n) as a double; 0 or -1 when it is none. Go's
 * ParseFloat (the Prometheus server's) takes NaN, [+-]Inf in any case,
 * decimals and hex floats; strtod takes the same, in the C locale this
 * program keeps. */
static int parse_value(const char *p, size_t n, double *v)
{
	char tok[CW_PROM_VALUE_MAX + 1];
	char *end;

	if (!n || n > CW_PROM_VALUE_MAX)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!name_char(p[i]) && p[i] != '.' && p[i] != '+' && p[i] != '-')
			return -1;
	memcpy(tok, p, n);
	tok[n] = '\0';
	*v = strtod(tok, &end);
	return end == tok + n ? 0 : -1;
}

/* One line p[0..e) without its line end: the want it is a sample of
 * (index) and its value, or -1. */
static int parse_line(const char *p, const char *e, const struct cw_prom_want *want, size_t nwant, double *v)
{
	const char *name, *val;
	size_t nl;
	int hit = -1;

	p = skip_blanks(p, e);
	if (p >= e || !name_start(*p))
		return -1; /* blank, a comment (HELP, TYPE) or junk */
	name = p;
	while (p < e && name_char(*p))
		p++;
	nl = (size_t)(p - name);
	for (size_t i = 0; i < nwant && hit < 0; i++)
		if (want[i].name && strlen(want[i].name) == nl && !memcmp(want[i].name, name, nl))
			hit = (int)i;
	if (hit < 0)
		return -1;
	val = skip_blanks(p, e);
	if (val < e && *val == '{') {
		if (!(p = skip_labels(val, e)))
			return -1;
		val = skip_blanks(p, e);
	}
	if (val == p) /* no blank before the value */
		return -1;
	p = val;
	while (p < e && !is_blank(*p))
		p++;
	if (parse_value(val, (size_t)(p - val), v))
		return -1;
	/* A timestamp (milliseconds, or OpenMetrics' seconds), then an
	 * exemplar or nothing. */
	p = skip_blanks(p, e);
	if (p < e && *p != '#') {
		const char *ts = p;
		double t;

		while (p < e && !is_blank(*p))
			p++;
		if (parse_value(ts, (size_t)(p - ts), &t) || !isfinite(t))
			return -1;
		p = skip_blanks(p, e);
	}
	if (p < e && *p != '#')
		return -1;
	return hit;
}

int cw_prom_sum(const char *buf, size_t len, struct cw_prom_want *want, size_t nwant)
{
	const char *p = buf, *end = buf + len;
	int n = 0;

	if ((!buf && len) || (!want && nwant))
		return -EINVAL;
	for (size_t i = 0; i < nwant; i++) {
		want[i].sum = 0;
		want[i].samples = 0;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		double v;
		int i;

		if (e > p && e[-1] == '\r')
			e--;
		i = parse_line(p, e, want, nwant, &v);
		if (i >= 0 && !isnan(v) && n < INT_MAX) {
			want[i].sum += v;
			want[i].samples++;
			n++;
		}
		p = nl ? nl + 1 : end;
	}
	return n;
}
