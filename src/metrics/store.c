/* /metrics families read from the store: per-op latency histograms from the
 * per-second aggregates (never from scanning events), the sessions' loss and
 * health counters, stored chains, and the host's latest snapshot. Every
 * query reads a table whose size does not grow with the number of calls
 * except the aggregates (one row per op and second), so a scrape stays cheap
 * on large databases. */
#define _GNU_SOURCE
#include "metrics/families.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/hist.h"
#include "store/store.h"

/* name{node="..",k="v"}: the node label is on every series. */
static void series2(struct strbuf *sb, const char *name, const char *node, const char *k,
		    const char *v)
{
	strbuf_adds(sb, name);
	strbuf_adds(sb, "{node=\"");
	cw_prom_escape_label(sb, node ? node : "");
	strbuf_addch(sb, '"');
	if (k) {
		strbuf_addf(sb, ",%s=\"", k);
		cw_prom_escape_label(sb, v ? v : "");
		strbuf_addch(sb, '"');
	}
}

static const char *text(sqlite3_stmt *st, int col)
{
	const char *s = (const char *)sqlite3_column_text(st, col);

	return s ? s : "";
}

/* ---- per-op histograms ---- */

struct opacc {
	struct cw_hist h;
	struct cw_prom_series s;
	int used;
};

/* Converts the accumulated stored histogram to the fixed buckets and hands
 * it to cb. */
static int flush_op(struct opacc *a, int (*cb)(void *, const struct cw_prom_series *), void *ctx)
{
	unsigned hb = 0, b;

	if (!a->used)
		return 0;
	a->used = 0;
	memset(a->s.buckets, 0, sizeof(a->s.buckets));
	for (b = 0; b <= CW_PROM_BUCKETS; b++) {
		/* Every stored bucket below the bound 1024 << b lies wholly below it. */
		unsigned end = b < CW_PROM_BUCKETS ? cw_hist_bucket(1024ULL << b) : CW_HIST_BUCKETS;

		for (; hb < end && hb < CW_HIST_BUCKETS; hb++)
			a->s.buckets[b] += a->h.buckets[hb];
	}
	a->s.count = a->h.count;
	a->s.sum_ns = a->h.sum_ns;
	return cb(ctx, &a->s);
}

int cw_metrics_store_op_series(sqlite3 *db, int (*cb)(void *ctx, const struct cw_prom_series *s),
			       void *ctx)
{
	struct opacc *a;
	sqlite3_stmt *st;
	int rc, crc = 0;

	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	rc = sqlite3_prepare_v2(db,
				"SELECT node, source, op, count, sum_ns, max_ns, hist FROM aggregates "
				"ORDER BY node, source, op",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		goto out;
	while (!crc && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *node = text(st, 0), *src = text(st, 1), *op = text(st, 2);
		uint64_t cnt = (uint64_t)sqlite3_column_int64(st, 3);

		if (a->used && (strncmp(a->s.node, node, sizeof(a->s.node) - 1) ||
				strncmp(a->s.source, src, sizeof(a->s.source) - 1) ||
				strncmp(a->s.op, op, sizeof(a->s.op) - 1)))
			crc = flush_op(a, cb, ctx);
		if (!a->used) {
			cw_hist_reset(&a->h);
			memset(&a->s, 0, sizeof(a->s));
			snprintf(a->s.node, sizeof(a->s.node), "%s", node);
			snprintf(a->s.source, sizeof(a->s.source), "%s", src);
			snprintf(a->s.op, sizeof(a->s.op), "%s", op);
			a->used = 1;
		}
		/* A malformed blob costs that second's buckets, not the page. */
		(void)cw_hist_decode_merge(&a->h, sqlite3_column_blob(st, 6),
					   (size_t)sqlite3_column_bytes(st, 6), cnt,
					   (uint64_t)sqlite3_column_int64(st, 4),
					   (uint64_t)sqlite3_column_int64(st, 5));
	}
	if (!crc)
		crc = flush_op(a, cb, ctx);
	rc = rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
	sqlite3_finalize(st);
out:
	free(a);
	if (crc)
		return crc;
	return rc == SQLITE_OK ? 0 : cw_sqlite_errno(rc);
}

static int prom_op(void *ctx, const struct cw_prom_series *s)
{
	struct strbuf *sb = ctx;
	uint64_t cum = 0;
	unsigned b;

	for (b = 0; b <= CW_PROM_BUCKETS; b++) {
		cum += s->buckets[b];
		series2(sb, "causeway_op_duration_seconds_bucket", s->node, "source", s->source);
		strbuf_adds(sb, ",op=\"");
		cw_prom_escape_label(sb, s->op);
		if (b < CW_PROM_BUCKETS)
			strbuf_addf(sb, "\",le=\"%.9g\"} %llu\n", cw_prom_bucket_le(b),
				    (unsigned long long)cum);
		else
			strbuf_addf(sb, "\",le=\"+Inf\"} %llu\n", (unsigned long long)cum);
	}
	series2(sb, "causeway_op_duration_seconds_sum", s->node, "source", s->source);
	strbuf_adds(sb, ",op=\"");
	cw_prom_escape_label(sb, s->op);
	strbuf_addf(sb, "\"} %.9g\n", (double)s->sum_ns / 1e9);
	series2(sb, "causeway_op_duration_seconds_count", s->node, "source", s->source);
	strbuf_adds(sb, ",op=\"");
	cw_prom_escape_label(sb, s->op);
	strbuf_addf(sb, "\"} %llu\n", (unsigned long long)s->count);
	return sb->overflow ? -ENOMEM : 0;
}

int cw_metrics_store_ops(sqlite3 *db, struct strbuf *sb)
{
	strbuf_adds(sb, "# HELP causeway_op_duration_seconds Duration of traced calls per op, "
			"over the whole store (from the per-second aggregates).\n"
			"# TYPE causeway_op_duration_seconds histogram\n");
	return cw_metrics_store_op_series(db, prom_op, sb);
}

/* Failing calls per op from the aggregates' errors column (schema v10):
 * one row per op and second, like the histograms, so a scrape never scans
 * events. The aggregates keep neither the process nor the code, so the
 * store's series carry node, source and op; the live session's add
 * process, error and family (docs/metrics.md). A file written before v10
 * has no errors column: the family is there, without series. */
int cw_metrics_store_failures(sqlite3 *db, struct strbuf *sb)
{
	sqlite3_stmt *st;
	int rc;

	strbuf_adds(sb, "# HELP causeway_op_failures_total Traced CUDA, driver and NCCL calls that failed, "
			"per op, over the whole store (from the per-second aggregates).\n"
			"# TYPE causeway_op_failures_total counter\n");
	rc = sqlite3_prepare_v2(db,
				"SELECT node, source, op, sum(errors) FROM aggregates GROUP BY node, source, op"
				" HAVING sum(errors) > 0 ORDER BY node, source, op",
				-1, &st, NULL);
	if (rc == SQLITE_ERROR)
		return 0;
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		series2(sb, "causeway_op_failures_total", text(st, 0), "source", text(st, 1));
		strbuf_adds(sb, ",op=\"");
		cw_prom_escape_label(sb, text(st, 2));
		strbuf_addf(sb, "\"} %lld\n", (long long)sqlite3_column_int64(st, 3));
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

/* ---- session counters ---- */

/* Counters whose value is a count of lost records, calls or rows. */
int cw_metrics_counter_is_loss(const char *name)
{
	static const char *const prefixes[] = {
		"trace.ring_drops.",       "trace.cuda.dropped",       "trace.cuda.state_map_full",
		"trace.consumer.rejected", "pipeline.rejected_",       "pipeline.unpaired_returns",
		"pipeline.write_errors",   "pipeline.overflow_entries", "store.failed_rows",
		"otlp.dropped",            "otlp.refused",
	};

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

int cw_metrics_store_counters(sqlite3 *db, struct strbuf *sb)
{
	struct strbuf lost, stat, agg;
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(db,
				"SELECT node, name, CAST(total(value) AS INTEGER) FROM counters GROUP BY node, name "
				"ORDER BY node, name",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	strbuf_init(&lost, sb->cap);
	strbuf_init(&stat, sb->cap);
	strbuf_init(&agg, sb->cap);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *node = text(st, 0), *name = text(st, 1);
		long long v = sqlite3_column_int64(st, 2);

		if (cw_metrics_counter_is_loss(name)) {
			series2(&lost, "causeway_events_lost_total", node, "counter", name);
			strbuf_addf(&lost, "} %lld\n", v);
		}
		if (!strcmp(name, "trace.cuda.aggregated")) {
			series2(&agg, "causeway_calls_aggregated_total", node, NULL, NULL);
			strbuf_addf(&agg, "} %lld\n", v);
		}
		series2(&stat, "causeway_session_stat", node, "name", name);
		strbuf_addf(&stat, "} %lld\n", v);
	}
	sqlite3_finalize(st);
	strbuf_adds(sb, "# HELP causeway_events_lost_total Records, calls or rows lost, by the "
			"session counter that counted them, summed over the stored sessions.\n"
			"# TYPE causeway_events_lost_total counter\n");
	strbuf_add(sb, strbuf_str(&lost), lost.len);
	strbuf_adds(sb, "# HELP causeway_calls_aggregated_total Calls counted in the kernel "
			"instead of stored one by one (ring above its high-water mark).\n"
			"# TYPE causeway_calls_aggregated_total counter\n");
	strbuf_add(sb, strbuf_str(&agg), agg.len);
	strbuf_adds(sb, "# HELP causeway_session_stat Every stored session counter by name "
			"(docs/schema.md), summed over the stored sessions.\n"
			"# TYPE causeway_session_stat gauge\n");
	strbuf_add(sb, strbuf_str(&stat), stat.len);
	if (lost.overflow || stat.overflow || agg.overflow)
		sb->overflow = 1;
	strbuf_release(&lost);
	strbuf_release(&stat);
	strbuf_release(&agg);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

/* ---- chains and the host ---- */

int cw_metrics_store_chains(sqlite3 *db, struct strbuf *sb)
{
	sqlite3_stmt *st;
	int rc;

	/* The affected thread's tenant from the chain's "container" object
	 * (docs/tenants.md): the CW_METRICS_MAX_TENANTS tenants with the most
	 * chains keep container/pod/namespace labels, the others are counted
	 * without them, so the family's size stays bounded. */
	rc = sqlite3_prepare_v2(db,
				"WITH c AS (SELECT node, kind, severity,"
				" CASE WHEN json_valid(json) THEN json_extract(json, '$.container.id') END AS cid,"
				" CASE WHEN json_valid(json) THEN json_extract(json, '$.container.pod') END AS pod,"
				" CASE WHEN json_valid(json) THEN json_extract(json, '$.container.namespace') END AS ns"
				" FROM chains),"
				" t AS (SELECT cid, pod, ns FROM c WHERE cid IS NOT NULL OR pod IS NOT NULL"
				" GROUP BY cid, pod, ns ORDER BY count(*) DESC, cid, pod LIMIT ?1)"
				" SELECT c.node, c.kind, c.severity, t.cid, t.pod, t.ns, count(*)"
				" FROM c LEFT JOIN t ON t.cid IS c.cid AND t.pod IS c.pod AND t.ns IS c.ns"
				" GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_int(st, 1, CW_METRICS_MAX_TENANTS);
	strbuf_adds(sb, "# HELP causeway_chains Causal chains stored by explain, by kind and "
			"severity, and by the affected thread's tenant where known.\n# TYPE causeway_chains gauge\n");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		series2(sb, "causeway_chains", text(st, 0), "kind", text(st, 1));
		strbuf_adds(sb, ",severity=\"");
		cw_prom_escape_label(sb, text(st, 2));
		strbuf_addch(sb, '"');
		cw_prom_tenant_labels(sb, text(st, 3), text(st, 4), text(st, 5));
		strbuf_addf(sb, "} %lld\n", (long long)sqlite3_column_int64(st, 6));
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

int cw_metrics_store_host(sqlite3 *db, struct strbuf *sb)
{
	static const struct {
		const char *name, *help;
		double scale;
	} g[] = {
		{ "causeway_host_cpu_busy_ratio", "Host CPU busy share at the last snapshot.", 0.01 },
		{ "causeway_host_memory_used_ratio", "Host memory in use at the last snapshot.", 0.01 },
		{ "causeway_host_swap_used_bytes", "Swap in use at the last snapshot.", 1 },
		{ "causeway_host_io_busy_ratio", "Busiest block device's busy share at the last "
						 "snapshot.", 0.01 },
		{ "causeway_host_io_bytes_per_second", "Block I/O rate at the last snapshot.", 1 },
		{ "causeway_host_page_allocs_per_second", "Page allocation rate at the last "
							  "snapshot.", 1 },
	};
	struct strbuf col[6];
	sqlite3_stmt *st;
	unsigned i;
	int rc;

	/* The newest snapshot of each node: with max(), SQLite's bare columns
	 * come from the row that holds the maximum. One row a second per node,
	 * so a day is ~86,000 rows to scan. */
	rc = sqlite3_prepare_v2(db,
				"SELECT node, cpu_pct, mem_pct, swap_used_bytes, io_busy_pct, "
				"io_bytes_per_s, page_alloc_per_s, max(mono_ns) FROM snapshots "
				"GROUP BY node ORDER BY node",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	for (i = 0; i < 6; i++)
		strbuf_init(&col[i], sb->cap);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		for (i = 0; i < 6; i++) {
			if (sqlite3_column_type(st, (int)i + 1) == SQLITE_NULL)
				continue;
			series2(&col[i], g[i].name, text(st, 0), NULL, NULL);
			strbuf_addf(&col[i], "} %.6g\n",
				    sqlite3_column_double(st, (int)i + 1) * g[i].scale);
		}
	sqlite3_finalize(st);
	for (i = 0; i < 6; i++) {
		strbuf_addf(sb, "# HELP %s %s\n# TYPE %s gauge\n", g[i].name, g[i].help, g[i].name);
		strbuf_add(sb, strbuf_str(&col[i]), col[i].len);
		if (col[i].overflow)
			sb->overflow = 1;
		strbuf_release(&col[i]);
	}
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}
