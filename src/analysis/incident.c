/* Incidents in time (incident.h). */
#include "analysis/incident.h"

#include <stdlib.h>

/* The median of the per-second means of st's seconds with calls; 0 when
 * there are too few seconds to call anything normal. */
static uint64_t normal_mean(const struct cw_opstat *st)
{
	double *m = malloc((st->nsecs ? st->nsecs : 1) * sizeof(*m));
	size_t n = 0;
	uint64_t med;

	if (!m)
		return 0;
	for (size_t i = 0; i < st->nsecs; i++)
		if (st->secs[i].count)
			m[n++] = (double)st->secs[i].sum_ns / (double)st->secs[i].count;
	med = n >= CW_INCIDENT_MIN_BASELINE ? (uint64_t)cw_median(m, n) : 0;
	free(m);
	return med;
}

static int slow_second(const struct cw_opsec *s, uint64_t normal)
{
	return s->count && (double)s->sum_ns >= CW_INCIDENT_FACTOR * (double)normal * (double)s->count;
}

static int by_time(const void *a, const void *b)
{
	const struct cw_incident *x = a, *y = b;

	return (x->from_sec > y->from_sec) - (x->from_sec < y->from_sec);
}

/* Keeps run among the max costliest in out[0..*n), ordered by excess (the
 * earlier of two equally costly). */
static void keep_costliest(struct cw_incident *out, int max, int *n, const struct cw_incident *run)
{
	int k;

	if (*n == max) {
		if (out[max - 1].excess_ns >= run->excess_ns)
			return;
		k = max - 1;
	} else {
		k = (*n)++;
	}
	while (k > 0 && out[k - 1].excess_ns < run->excess_ns) {
		out[k] = out[k - 1];
		k--;
	}
	out[k] = *run;
}

int cw_incident_find_all(const struct cw_opstat *st, struct cw_incident *out, int max, int *total)
{
	uint64_t normal = normal_mean(st);
	int n = 0;

	*total = 0;
	if (!normal || max <= 0)
		return 0;
	for (size_t i = 0; i < st->nsecs;) {
		struct cw_incident run = { .from_sec = st->secs[i].second, .normal_mean_ns = normal };
		size_t j = i;

		/* A run: consecutive seconds (no second missing), each slow. */
		while (j < st->nsecs && slow_second(&st->secs[j], normal) &&
		       (j == i || st->secs[j].second == st->secs[j - 1].second + 1)) {
			run.count += st->secs[j].count;
			run.sum_ns += st->secs[j].sum_ns;
			run.to_sec = st->secs[j].second;
			j++;
		}
		if (j == i) {
			i++;
			continue;
		}
		run.excess_ns = run.sum_ns - run.count * normal;
		if (run.to_sec - run.from_sec + 1 >= CW_INCIDENT_MIN_SECONDS && run.excess_ns >= CW_INCIDENT_MIN_EXCESS_NS) {
			(*total)++;
			keep_costliest(out, max, &n, &run);
		}
		i = j;
	}
	qsort(out, (size_t)n, sizeof(*out), by_time);
	return n;
}

int cw_incident_find(const struct cw_opstat *st, struct cw_incident *out)
{
	int total;

	return cw_incident_find_all(st, out, 1, &total);
}
