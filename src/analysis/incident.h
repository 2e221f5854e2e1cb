/* Incidents in time: an op whose latency rises for seconds against its own
 * normal, wherever it sits in the window. A window's p99/p50 dilutes a
 * short incident away (3 s of slow syncs in 40 s of normal ones leave p99
 * under 3x p50), so explain also reads the op's per-second means from the
 * aggregates: a run of seconds whose mean is CW_INCIDENT_FACTOR x the op's
 * normal (the median of its per-second means over the window) is an
 * incident, explained on its own seconds against the normal p50. Every
 * separate run is an incident of its own (an hour holds several, each
 * with its own culprit), up to CW_INCIDENT_MAX per op. */
#ifndef CW_ANALYSIS_INCIDENT_H
#define CW_ANALYSIS_INCIDENT_H

#include <stdint.h>

#include "analysis/stats.h"

/* A second is slow at this multiple of the op's normal per-second mean. */
#define CW_INCIDENT_FACTOR 3.0
/* An incident lasts at least this many consecutive slow seconds ... */
#define CW_INCIDENT_MIN_SECONDS 2
/* ... and costs at least this much time beyond the normal (ns). */
#define CW_INCIDENT_MIN_EXCESS_NS 100000000ull
/* Seconds of the op needed to call anything normal. */
#define CW_INCIDENT_MIN_BASELINE 5

struct cw_incident {
	int64_t from_sec, to_sec; /* inclusive wall seconds */
	uint64_t count, sum_ns;   /* the op's calls in those seconds */
	uint64_t normal_mean_ns;  /* the op's normal per-second mean */
	uint64_t excess_ns;       /* sum_ns - count x normal_mean_ns */
};

/* At most this many incidents of an op are explained in one window: the
 * costliest ones. */
#define CW_INCIDENT_MAX 16

/* The incidents of st's seconds: fills out[] with the max costliest (by
 * excess time), in time order, and returns how many; *total is how many
 * the window holds (more than max when some were left out). */
int cw_incident_find_all(const struct cw_opstat *st, struct cw_incident *out, int max, int *total);

/* The costliest incident of st's seconds (by excess time): 1 with *out
 * filled, 0 when there is none. */
int cw_incident_find(const struct cw_opstat *st, struct cw_incident *out);

#endif
