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

struct usable {
	int64_t off, rtt;
};

static int cmp_rtt(const void *a, const void *b)
{
	const struct usable *x = a, *y = b;

	return x->rtt < y->rtt ? -1 : x->rtt > y->rtt;
}

int cw_skew_compute(const struct cw_skew_sample *s, int n, struct cw_skew *out)
{
	struct usable *u;
	int64_t *v;
	int i, m = 0, best;

	memset(out, 0, sizeof(*out));
	if (n <= 0)
		return -EAGAIN;
	u = calloc((size_t)n, sizeof(*u));
	v = calloc((size_t)n, sizeof(*v));
	if (!u || !v) {
		free(u);
		free(v);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		if (s[i].t1_ns < s[i].t0_ns || !s[i].server_ns)
			continue;
		/* (t0 + t1) / 2 without overflowing 64 bits. */
		u[m].off = (int64_t)s[i].server_ns -
			   (int64_t)(s[i].t0_ns + (s[i].t1_ns - s[i].t0_ns) / 2);
		u[m].rtt = (int64_t)(s[i].t1_ns - s[i].t0_ns);
		m++;
	}
	out->samples = m;
	if (m) {
		for (i = 0; i < m; i++)
			v[i] = u[i].rtt;
		out->rtt_ns = (uint64_t)median(v, m);
		for (i = 0; i < m; i++)
			v[i] = u[i].off;
		median(v, m);
		out->spread_ns = (uint64_t)(v[m - 1] - v[0]);
		/* A sample's error is at most half its round trip, and a delayed
		 * answer (a descheduled agent, a queued packet) errs by its delay:
		 * the estimate is the median of the faster half (NTP's clock
		 * filter prefers the shortest round trips the same way). */
		qsort(u, (size_t)m, sizeof(*u), cmp_rtt);
		best = (m + 1) / 2;
		for (i = 0; i < best; i++)
			v[i] = u[i].off;
		out->offset_ns = median(v, best);
	}
	out->valid = m >= CW_SKEW_MIN_SAMPLES;
	free(u);
	free(v);
	return out->valid ? 0 : -EAGAIN;
}
