#define _GNU_SOURCE
#include "util/timeutil.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/parse.h"

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

uint64_t cw_monotonic_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t cw_realtime_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

static const struct cw_unit duration_units[] = {
	{ "ns", 1 },
	{ "us", NSEC_PER_USEC },
	{ "ms", NSEC_PER_MSEC },
	{ "s", NSEC_PER_SEC },
	{ "m", 60 * NSEC_PER_SEC },
	{ "h", 3600 * NSEC_PER_SEC },
	{ "d", 86400 * NSEC_PER_SEC },
	{ "", NSEC_PER_SEC },
};

int cw_parse_duration(const char *s, uint64_t *out_ns)
{
	double ns;
	int rc = cw_parse_scaled(s, duration_units, sizeof(duration_units) / sizeof(duration_units[0]), 0, &ns);

	if (rc)
		return rc;
	if (ns >= 1.8e19)
		return -ERANGE;
	/* "1e-300s" is not a usable zero: only "0" is. */
	if (ns > 0 && ns < 0.5)
		return -ERANGE;
	*out_ns = (uint64_t)(ns + 0.5);
	return 0;
}

static int parse_fraction_ns(const char **p, uint64_t *ns)
{
	uint64_t scale = NSEC_PER_SEC / 10;

	*ns = 0;
	if (**p != '.')
		return 0;
	(*p)++;
	if (!isdigit((unsigned char)**p))
		return -EINVAL;
	while (isdigit((unsigned char)**p)) {
		*ns += (uint64_t)(**p - '0') * scale;
		scale /= 10;
		(*p)++;
	}
	return 0;
}

int cw_parse_time(const char *s, uint64_t *out_ns)
{
	struct tm tm;
	const char *p;
	uint64_t frac;
	long offset = 0;
	time_t t;

	if (!s || !*s)
		return -EINVAL;
	/* Epoch seconds. */
	if (isdigit((unsigned char)*s) && strspn(s, "0123456789.") == strlen(s)) {
		char *end;
		unsigned long long sec;

		errno = 0;
		sec = strtoull(s, &end, 10);
		/* Past INT64_MAX ns (2262) the nanoseconds would wrap. */
		if (errno || sec >= (uint64_t)INT64_MAX / NSEC_PER_SEC)
			return -EINVAL;
		p = end;
		if (parse_fraction_ns(&p, &frac) || *p)
			return -EINVAL;
		*out_ns = sec * NSEC_PER_SEC + frac;
		return 0;
	}
	memset(&tm, 0, sizeof(tm));
	p = strptime(s, "%Y-%m-%d", &tm);
	if (!p)
		return -EINVAL;
	if (*p == 'T' || *p == ' ') {
		p = strptime(p + 1, "%H:%M:%S", &tm);
		if (!p)
			return -EINVAL;
	}
	if (parse_fraction_ns(&p, &frac))
		return -EINVAL;
	if (*p == 'Z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p == '-' ? -1 : 1, hh, mm;

		if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2 || hh > 23 || mm > 59)
			return -EINVAL;
		offset = sign * (hh * 3600L + mm * 60L);
		p += 6;
	}
	if (*p)
		return -EINVAL;
	t = timegm(&tm);
	/* Before the epoch once the offset applies, or past 2262: no
	 * wall-clock ns to give. */
	if (t == (time_t)-1 || t < offset || t - offset >= (time_t)(INT64_MAX / (int64_t)NSEC_PER_SEC))
		return -EINVAL;
	*out_ns = (uint64_t)(t - offset) * NSEC_PER_SEC + frac;
	return 0;
}

void cw_format_time(uint64_t ns, char *buf, int len)
{
	time_t t = (time_t)(ns / NSEC_PER_SEC);
	struct tm tm;
	char tmp[32];

	gmtime_r(&t, &tm);
	strftime(tmp, sizeof(tmp), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, (size_t)len, "%s.%03uZ", tmp, (unsigned)((ns / NSEC_PER_MSEC) % 1000));
}

void cw_format_duration(uint64_t ns, char *buf, int len)
{
	if (ns < NSEC_PER_USEC)
		snprintf(buf, (size_t)len, "%lluns", (unsigned long long)ns);
	else if (ns < NSEC_PER_MSEC)
		snprintf(buf, (size_t)len, "%.1fus", (double)ns / NSEC_PER_USEC);
	else if (ns < NSEC_PER_SEC)
		snprintf(buf, (size_t)len, "%.1fms", (double)ns / NSEC_PER_MSEC);
	else
		snprintf(buf, (size_t)len, "%.2fs", (double)ns / NSEC_PER_SEC);
}
