/* The expected latency of an op, from outside the window: the op's calls
 * in the hour before the window and the hour after it (per-second
 * aggregates of the same node, source and op). A window narrowed around
 * an incident (--from/--to) is judged against this normal, not against
 * its own already slow p50 (docs/rules.md "Expected latency"). */
#ifndef CW_ANALYSIS_BASELINE_H
#define CW_ANALYSIS_BASELINE_H

#include <sqlite3.h>
#include <stdint.h>

#include "analysis/stats.h"

/* Seconds read on each side of the window. */
#define CW_BASELINE_SPAN_SEC 3600
/* A baseline needs this many calls over this many distinct seconds. */
#define CW_BASELINE_MIN_CALLS 100
#define CW_BASELINE_MIN_SECONDS 5
/* The window is judged against the baseline when its p50 is at least
 * this many times the baseline's. */
#define CW_BASELINE_SLOWER 1.5

struct cw_baseline {
	uint64_t p50_ns;
	uint64_t count;
	uint64_t seconds;
};

/* Fills out from st's op outside [from_sec, to_sec] (wall seconds,
 * inclusive). Returns 1 when there is a baseline, 0 when too few calls lie
 * outside the window, or -errno. */
int cw_baseline_load(sqlite3 *db, const struct cw_opstat *st, int64_t from_sec, int64_t to_sec,
		     struct cw_baseline *out);

#endif
