/* Small statistics the causal engine is built from: interval overlap and
 * union arithmetic, dispersion of a series, and per-op percentiles read
 * from the per-second aggregates (never from a scan of events). */
#ifndef CW_ANALYSIS_STATS_H
#define CW_ANALYSIS_STATS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "util/hist.h"

struct cw_interval {
	uint64_t start, end; /* [start, end), ns */
};

/* Length of [a0,a1) ∩ [b0,b1); 0 when disjoint or empty. */
uint64_t cw_overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1);

/* Sorts v by start and merges overlapping or touching intervals in place.
 * Returns the new count. */
size_t cw_intervals_union(struct cw_interval *v, size_t n);
/* Length of [s,e) covered by a sorted, merged interval set. */
uint64_t cw_intervals_cover(const struct cw_interval *v, size_t n, uint64_t s, uint64_t e);

/* Coefficient of variation (stddev / mean) of x[0..n); -1 when n < 2 or
 * the mean is 0. */
double cw_cv(const double *x, size_t n);
/* Median of x[0..n) (x is sorted in place); 0 when n == 0. */
double cw_median(double *x, size_t n);

/* One second of one op, from the aggregates table. */
struct cw_opsec {
	int64_t second;
	uint64_t count, sum_ns, max_ns;
};

/* One (node, source, op) over a window. */
struct cw_opstat {
	char node[64];
	char source[16];
	char op[48];
	/* The calls that succeeded: latencies are theirs alone (schema v8;
	 * an older file's count holds its failing calls too). */
	uint64_t count, sum_ns, max_ns;
	uint64_t errors; /* calls that failed, counted apart */
	uint64_t p50_ns, p95_ns, p99_ns;
	/* 1: p50_ns is the op's expected latency from outside the window
	 * (analysis/baseline.h), not the window's own median. */
	int expected_outside;
	struct cw_hist hist;
	struct cw_opsec *secs; /* ascending by second */
	size_t nsecs;
};

/* Loads every op of the window [from_sec, to_sec] (wall seconds,
 * inclusive) from aggregates, optionally for one node; an op whose calls
 * all failed has count 0. Returns the count
 * of ops (*out malloc'd) or -errno. */
int cw_opstats_load(sqlite3 *db, const char *node, int64_t from_sec, int64_t to_sec,
		    struct cw_opstat **out);
void cw_opstats_free(struct cw_opstat *v, size_t n);

/* The same op restricted to one process: count, percentiles, histogram
 * and per-second counts of pid's calls of op->op on op->node with wall
 * time in [from_wall, to_wall], read from events (aggregates carry no
 * pid) and, for calls folded in the kernel, from the folded table's
 * seconds in the window. out->secs is malloc'd: the caller frees it.
 * Returns 0 or -errno. */
int cw_opstat_for_pid(sqlite3 *db, const struct cw_opstat *op, int64_t pid, uint64_t from_wall,
		      uint64_t to_wall, struct cw_opstat *out);

/* Calls of op counted in seconds up to and including sec. */
uint64_t cw_opstat_calls_through(const struct cw_opstat *s, int64_t sec);

#endif
