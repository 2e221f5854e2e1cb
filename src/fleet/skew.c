#include "fleet/skew.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Median of sorted v; the mean of the two middle values for even n. */
static int64_t median(int64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_i64);
	if (n & 1)
		return v[n / 2];
	return v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
}

int cw_skew_compute(const struct cw_skew_sample *s, int n, struct cw_skew *out)
{
	int64_t *off, *rtt;
	int i, m = 0;

	memset(out, 0, sizeof(*out));
	if (n <= 0)
		return -EAGAIN;
	off = calloc((size_t)n, sizeof(*off));
	rtt = calloc((size_t)n, sizeof(*rtt));
	if (!off || !rtt) {
		free(off);
		free(rtt);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		if (s[i].t1_ns < s[i].t0_ns || !s[i].server_ns)
			continue;
		/* (t0 + t1) / 2 without overflowing 64 bits. */
		off[m] = (int64_t)s[i].server_ns -
			 (int64_t)(s[i].t0_ns + (s[i].t1_ns - s[i].t0_ns) / 2);
		rtt[m] = (int64_t)(s[i].t1_ns - s[i].t0_ns);
		m++;
	}
	out->samples = m;
	if (m) {
		out->offset_ns = median(off, m);
		out->spread_ns = (uint64_t)(off[m - 1] - off[0]);
		out->rtt_ns = (uint64_t)median(rtt, m);
	}
	out->valid = m >= CW_SKEW_MIN_SAMPLES;
	free(off);
	free(rtt);
	return out->valid ? 0 : -EAGAIN;
}
