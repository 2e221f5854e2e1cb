/* /metrics: Prometheus text exposition of the store's counters and per-op
 * latency. Per-op figures come from the per-second aggregates (histograms
 * merged over the whole database), never from scanning events. */
#define _GNU_SOURCE
#include "server/metrics.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/hist.h"
#include "server/internal.h"
#include "store/store.h"
#include "util/timeutil.h"

#define CW_METRICS_CAP (16u << 20)

int cw_prom_escape_label(struct strbuf *sb, const char *v)
{
	int rc = 0;

	for (; v && *v && !rc; v++) {
		if (*v == '\\')
			rc = strbuf_adds(sb, "\\\\");
		else if (*v == '"')
			rc = strbuf_adds(sb, "\\\"");
		else if (*v == '\n')
			rc = strbuf_adds(sb, "\\n");
		else
			rc = strbuf_addch(sb, *v);
	}
	return rc;
}

int cw_prom_sanitize_name(struct strbuf *sb, const char *s)
{
	int rc = 0;

	if (s && isdigit((unsigned char)*s))
		rc = strbuf_addch(sb, '_');
	for (; s && *s && !rc; s++)
		rc = strbuf_addch(sb, isalnum((unsigned char)*s) || *s == '_' ? *s : '_');
	return rc;
}

/* name{node="..",k2="v2"} — the node label is on every series. */
static void series(struct strbuf *sb, const char *name, const char *node, const char *k2,
		   const char *v2, const char *k3, const char *v3)
{
	strbuf_adds(sb, name);
	strbuf_adds(sb, "{node=\"");
	cw_prom_escape_label(sb, node);
	strbuf_addch(sb, '"');
	if (k2) {
		strbuf_addf(sb, ",%s=\"", k2);
		cw_prom_escape_label(sb, v2);
		strbuf_addch(sb, '"');
	}
	if (k3) {
		strbuf_addf(sb, ",%s=\"", k3);
		cw_prom_escape_label(sb, v3);
		strbuf_addch(sb, '"');
	}
	strbuf_addch(sb, '}');
}

struct opacc {
	char node[128], source[32], op[128];
	struct cw_hist h;
	uint64_t count, sum_ns, max_ns;
	int used;
};

static void flush_op(struct strbuf *lat, struct strbuf *mx, struct opacc *a)
{
	static const double qs[] = { 0.5, 0.95, 0.99 };
	char q[16];

	if (!a->used)
		return;
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		snprintf(q, sizeof(q), "%g", qs[i]);
		strbuf_adds(lat, "causeway_op_latency_seconds{node=\"");
		cw_prom_escape_label(lat, a->node);
		strbuf_adds(lat, "\",source=\"");
		cw_prom_escape_label(lat, a->source);
		strbuf_adds(lat, "\",op=\"");
		cw_prom_escape_label(lat, a->op);
		strbuf_addf(lat, "\",quantile=\"%s\"} %.9g\n", q,
			    (double)cw_hist_quantile(&a->h, qs[i]) / 1e9);
	}
	series(lat, "causeway_op_latency_seconds_sum", a->node, "source", a->source, "op", a->op);
	strbuf_addf(lat, " %.9g\n", (double)a->sum_ns / 1e9);
	series(lat, "causeway_op_latency_seconds_count", a->node, "source", a->source, "op",
	       a->op);
	strbuf_addf(lat, " %llu\n", (unsigned long long)a->count);
	series(mx, "causeway_op_latency_max_seconds", a->node, "source", a->source, "op", a->op);
	strbuf_addf(mx, " %.9g\n", (double)a->max_ns / 1e9);
	a->used = 0;
}

static int render_ops(sqlite3 *db, struct strbuf *sb)
{
	struct strbuf lat, mx;
	struct opacc *a;
	sqlite3_stmt *st;
	int rc;

	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	strbuf_init(&lat, CW_METRICS_CAP);
	strbuf_init(&mx, CW_METRICS_CAP);
	rc = sqlite3_prepare_v2(db,
				"SELECT node, source, op, count, sum_ns, max_ns, hist FROM aggregates "
				"ORDER BY node, source, op",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		goto out;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *node = (const char *)sqlite3_column_text(st, 0);
		const char *src = (const char *)sqlite3_column_text(st, 1);
		const char *op = (const char *)sqlite3_column_text(st, 2);
		uint64_t cnt = (uint64_t)sqlite3_column_int64(st, 3);
		uint64_t sum = (uint64_t)sqlite3_column_int64(st, 4);
		uint64_t max = (uint64_t)sqlite3_column_int64(st, 5);

		node = node ? node : "";
		src = src ? src : "";
		op = op ? op : "";
		if (a->used && (strcmp(a->node, node) || strcmp(a->source, src) ||
				strcmp(a->op, op)))
			flush_op(&lat, &mx, a);
		if (!a->used) {
			cw_hist_reset(&a->h);
			snprintf(a->node, sizeof(a->node), "%s", node);
			snprintf(a->source, sizeof(a->source), "%s", src);
			snprintf(a->op, sizeof(a->op), "%s", op);
			a->count = a->sum_ns = a->max_ns = 0;
			a->used = 1;
		}
		a->count += cnt;
		a->sum_ns += sum;
		if (max > a->max_ns)
			a->max_ns = max;
		/* A malformed blob costs that second's quantiles, not the page. */
		(void)cw_hist_decode_merge(&a->h, sqlite3_column_blob(st, 6),
					   (size_t)sqlite3_column_bytes(st, 6), cnt, sum, max);
	}
	flush_op(&lat, &mx, a);
	rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
	sqlite3_finalize(st);
	strbuf_adds(sb, "# HELP causeway_op_latency_seconds Latency of traced calls per op, "
			"over the whole store.\n# TYPE causeway_op_latency_seconds summary\n");
	strbuf_add(sb, strbuf_str(&lat), lat.len);
	strbuf_adds(sb, "# HELP causeway_op_latency_max_seconds Slowest traced call per op.\n"
			"# TYPE causeway_op_latency_max_seconds gauge\n");
	strbuf_add(sb, strbuf_str(&mx), mx.len);
out:
	strbuf_release(&lat);
	strbuf_release(&mx);
	free(a);
	return rc == SQLITE_OK ? 0 : cw_sqlite_errno(rc);
}

static int render_counters(sqlite3 *db, struct strbuf *sb)
{
	sqlite3_stmt *st;
	int rc;

	strbuf_adds(sb, "# HELP causeway_store_counter_total Loss and health counters of the "
			"stored sessions (drops, rejects, back-pressure), summed per node.\n"
			"# TYPE causeway_store_counter_total counter\n");
	rc = sqlite3_prepare_v2(db,
				"SELECT node, name, sum(value) FROM counters GROUP BY node, name "
				"ORDER BY node, name",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		series(sb, "causeway_store_counter_total",
		       (const char *)sqlite3_column_text(st, 0), "name",
		       (const char *)sqlite3_column_text(st, 1), NULL, NULL);
		strbuf_addf(sb, " %lld\n", (long long)sqlite3_column_int64(st, 2));
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return cw_sqlite_errno(rc);
	strbuf_adds(sb, "# HELP causeway_chains Causal chains stored by explain, per severity.\n"
			"# TYPE causeway_chains gauge\n");
	rc = sqlite3_prepare_v2(db,
				"SELECT node, severity, count(*) FROM chains GROUP BY node, severity "
				"ORDER BY node, severity",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		series(sb, "causeway_chains", (const char *)sqlite3_column_text(st, 0), "severity",
		       (const char *)sqlite3_column_text(st, 1), NULL, NULL);
		strbuf_addf(sb, " %lld\n", (long long)sqlite3_column_int64(st, 2));
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

void cw_metrics_render(struct cw_server *s, struct cw_reply *r)
{
	struct strbuf sb;
	uint64_t deadline;
	sqlite3 *db;
	char err[512];
	int rc;

	strbuf_init(&sb, CW_METRICS_CAP);
	strbuf_adds(&sb, "# HELP causeway_info The serving agent.\n# TYPE causeway_info gauge\n");
	series(&sb, "causeway_info", s->node, "version", CW_VERSION, NULL, NULL);
	strbuf_adds(&sb, " 1\n");
	strbuf_addf(&sb,
		    "# HELP causeway_http_requests_total Requests received by the API.\n"
		    "# TYPE causeway_http_requests_total counter\n"
		    "causeway_http_requests_total %llu\n"
		    "# HELP causeway_http_rejected_total Requests refused by the auth gate.\n"
		    "# TYPE causeway_http_rejected_total counter\n"
		    "causeway_http_rejected_total %llu\n"
		    "# HELP causeway_http_errors_total Requests answered with a 5xx status.\n"
		    "# TYPE causeway_http_errors_total counter\n"
		    "causeway_http_errors_total %llu\n",
		    (unsigned long long)atomic_load(&s->requests),
		    (unsigned long long)atomic_load(&s->rejected),
		    (unsigned long long)atomic_load(&s->errors));
	rc = cw_server_open_db(s, &db, &deadline, err, sizeof(err));
	if (rc) {
		strbuf_release(&sb);
		cw_reply_error(r, 503, "%s", err);
		return;
	}
	{
		struct cw_store st = { .db = db, .path = s->db_path };

		strbuf_addf(&sb,
			    "# HELP causeway_store_size_bytes Database file plus WAL.\n"
			    "# TYPE causeway_store_size_bytes gauge\n"
			    "causeway_store_size_bytes %lld\n",
			    (long long)cw_store_size_bytes(&st));
	}
	rc = render_counters(db, &sb);
	if (!rc)
		rc = render_ops(db, &sb);
	if (!rc)
		rc = cw_metrics_render_nccl(db, &sb);
	cw_server_close_db(db);
	if (rc || sb.overflow) {
		strbuf_release(&sb);
		cw_reply_error(r, 500, "cannot render metrics: %s",
			       rc ? strerror(-rc) : "larger than 16 MiB");
		return;
	}
	r->status = 200;
	r->ctype = "text/plain; version=0.0.4; charset=utf-8";
	r->len = sb.len;
	r->body = strbuf_detach(&sb);
	if (!r->body)
		r->body = strdup("");
}
