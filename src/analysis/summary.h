/* The per-op summary `query` prints without SQL: count, percentiles, max,
 * total time and share of wall time per (source, op), over a window that
 * ends at the newest data in the database.
 *
 * Percentiles come from the per-second histograms of the aggregates table
 * (merged, never from scanning events), so the summary of a 10-million-event
 * trace costs one pass over a few thousand rows. The per-line variant
 * (grouped by the Python user location of each call) has no aggregate to
 * read and scans the events in the window. */
#ifndef CW_ANALYSIS_SUMMARY_H
#define CW_ANALYSIS_SUMMARY_H

#include <jansson.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct cw_summary_opts {
	uint64_t since_ns; /* window length back from the newest second; 0 = all data */
	int by_line;       /* group by py_stacks.user_file:user_line, user_function too */
	/* A tenant filter (analysis/tenant_select.h): only the calls of these
	 * pids. npids 0: no filter; -1: a filter that matched nothing. */
	const int64_t *pids;
	int npids;
	int per_tenant;    /* one row per tenant and op (the cgroups table's tenant key) */
	/* One row per node and op (the per-op summary only), its wall share
	 * that node's own: a merged file's nodes each spend their own time. */
	int per_node;
};

struct cw_summary_row {
	char *source, *op;
	char *node;            /* per_node only */
	char *file, *function; /* by_line only; NULL when the call had no Python stack */
	int64_t line;          /* by_line only; 0 unknown */
	uint64_t count, p50_ns, p95_ns, p99_ns, max_ns, total_ns; /* the calls that succeeded */
	uint64_t failed; /* failing calls, counted apart (docs/rules.md "Failing calls") */
	double wall_share;     /* total_ns / (window_ns x nodes): per node; above 1 when threads overlap */
	/* per_tenant only: "pod ml/trainer-0", "docker container 3f2b9c0d1e4a",
	 * "-" for calls of a cgroup without an identity row; and the tenant's
	 * "container" object as chains carry it (JSON null when unknown). */
	char *tenant;
	json_t *container;
};

struct cw_summary {
	int64_t from_second, to_second; /* inclusive wall-clock seconds; 0 when empty */
	uint64_t window_ns;             /* (to - from + 1) s; 0 when empty */
	int nodes;                      /* nodes with data in the window (a merged file: several) */
	size_t n;
	struct cw_summary_row *rows;    /* by total_ns, largest first */
};

/* Built from the events (not the aggregates) when by_line, a tenant filter
 * or per_tenant asks for what the aggregates do not keep.
 *
 * Builds the summary from db (any connection that can read the schema).
 * Returns 0 or -errno (a SQLite failure translated by cw_sqlite_errno, or
 * -EINVAL for a malformed histogram blob). An empty database gives an
 * empty summary, not an error. */
int cw_summary_build(sqlite3 *db, const struct cw_summary_opts *opts, struct cw_summary **out);
void cw_summary_free(struct cw_summary *s);

/* One row as a JSON object: source, op, count, p50_ns, p95_ns, p99_ns,
 * max_ns, total_ns, wall_share, and with by_line file, line, function
 * (null when unknown), and with per_tenant tenant and container. The
 * contract of `query --json`. */
json_t *cw_summary_row_json(const struct cw_summary_row *r, int by_line);

#endif
