/* Clocks and the parsing of user-supplied durations and times. */
#ifndef CW_UTIL_TIMEUTIL_H
#define CW_UTIL_TIMEUTIL_H

#include <stdint.h>

#define NSEC_PER_USEC 1000ULL
#define NSEC_PER_MSEC 1000000ULL
#define NSEC_PER_SEC 1000000000ULL
/* The last whole second whose nanoseconds, and those of the second after
 * it, fit in int64 (2262-04-11): stored seconds are clamped to
 * [0, CW_SECOND_MAX] before they become a window in nanoseconds. */
#define CW_SECOND_MAX ((int64_t)(INT64_MAX / (int64_t)NSEC_PER_SEC) - 2)

static inline int64_t cw_clamp_second(int64_t s)
{
	return s < 0 ? 0 : s > CW_SECOND_MAX ? CW_SECOND_MAX : s;
}

uint64_t cw_monotonic_ns(void);
uint64_t cw_realtime_ns(void);

/* "250ms", "5s", "10m", "2h", "1d", "1500us", "42ns"; a bare number is
 * seconds. The number is as cw_parse_real (util/parse.h) takes it: no
 * sign, hex, inf or nan. Returns 0, -EINVAL (not a duration) or -ERANGE
 * (overflow, or a positive duration under half a nanosecond). */
int cw_parse_duration(const char *s, uint64_t *out_ns);

/* An absolute time: RFC 3339 ("2026-11-22T07:41:52Z", optional fraction and
 * offset, or a space instead of T) or a Unix epoch in seconds with an
 * optional fraction. Returns realtime ns or -EINVAL. */
int cw_parse_time(const char *s, uint64_t *out_ns);

/* Formats realtime ns as RFC 3339 UTC with milliseconds into buf. */
void cw_format_time(uint64_t realtime_ns, char *buf, int len);
/* Formats a duration compactly: "812ns", "4.2µs" -> "4.2us", "48.0ms", "3.20s". */
void cw_format_duration(uint64_t ns, char *buf, int len);

#endif
