/* /metrics: Prometheus text exposition of the store's counters and per-op
 * latency. Per-op figures come from the per-second aggregates (histograms
 * merged over the whole database), never from scanning events. */
#define _GNU_SOURCE
#include "metrics/families.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/resource.h>
#include <unistd.h>

#include "loader/prog_stats.h"
#include "metrics/live_metrics.h"
#include "metrics/writer_lag.h"
#include "server/internal.h"
#include "store/read_error.h"
#include "store/store.h"
#include "util/timeutil.h"

#define CW_METRICS_CAP (16u << 20)

void cw_server_set_live_metrics(struct cw_server *s, struct cw_live_metrics *m)
{
	atomic_store(&s->live, m);
}

void cw_server_set_writer_lag(struct cw_server *s, struct cw_writer_lag *l)
{
	atomic_store(&s->wlag, l);
}

/* The agent's own CPU time and resident memory, under the names every
 * Prometheus client library uses for them. */
static void render_self(struct strbuf *sb)
{
	struct rusage ru;
	long pages = 0, rss = 0;
	FILE *f;

	if (!getrusage(RUSAGE_SELF, &ru))
		strbuf_addf(sb,
			    "# HELP process_cpu_seconds_total CPU time of the causeway process.\n"
			    "# TYPE process_cpu_seconds_total counter\n"
			    "process_cpu_seconds_total %.6f\n",
			    (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
				    ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6);
	f = fopen("/proc/self/statm", "re");
	if (f && fscanf(f, "%ld %ld", &pages, &rss) == 2)
		strbuf_addf(sb,
			    "# HELP process_resident_memory_bytes Resident memory of the causeway "
			    "process.\n# TYPE process_resident_memory_bytes gauge\n"
			    "process_resident_memory_bytes %lld\n",
			    (long long)rss * sysconf(_SC_PAGESIZE));
	if (f)
		fclose(f);
}

/* trace --serve: run time and count of this agent's own BPF programs. */
/* name{node="..",program="..: a series of one BPF program, open for its
 * closing quote and value. */
static void program_series(struct strbuf *sb, const char *name, const char *node, const char *prog)
{
	strbuf_adds(sb, name);
	strbuf_adds(sb, "{node=\"");
	cw_prom_escape_label(sb, node);
	strbuf_adds(sb, "\",program=\"");
	cw_prom_escape_label(sb, prog);
}

static void render_bpf(struct strbuf *sb, const char *node)
{
	struct cw_prog_stat ps[64];
	int n = cw_prog_stats(ps, 64), i;

	if (n <= 0)
		return;
	strbuf_adds(sb, "# HELP causeway_bpf_program_run_seconds_total Time the agent's BPF "
			"programs ran in the kernel (counted while BPF statistics are enabled: "
			"trace --bpf-stats or kernel.bpf_stats_enabled=1).\n"
			"# TYPE causeway_bpf_program_run_seconds_total counter\n");
	for (i = 0; i < n; i++) {
		program_series(sb, "causeway_bpf_program_run_seconds_total", node, ps[i].name);
		strbuf_addf(sb, "\"} %.9f\n", (double)ps[i].run_time_ns / 1e9);
	}
	strbuf_adds(sb, "# HELP causeway_bpf_program_runs_total Runs of the agent's BPF programs "
			"(counted while BPF statistics are enabled).\n"
			"# TYPE causeway_bpf_program_runs_total counter\n");
	for (i = 0; i < n; i++) {
		program_series(sb, "causeway_bpf_program_runs_total", node, ps[i].name);
		strbuf_addf(sb, "\"} %llu\n", (unsigned long long)ps[i].run_cnt);
	}
}

void cw_metrics_render(struct cw_server *s, struct cw_reply *r)
{
	struct strbuf sb;
	uint64_t deadline;
	sqlite3 *db;
	char err[512];
	int rc;

	strbuf_init(&sb, CW_METRICS_CAP);
	strbuf_adds(&sb, "# HELP causeway_info The serving agent.\n# TYPE causeway_info gauge\n"
			 "causeway_info{node=\"");
	cw_prom_escape_label(&sb, s->node);
	strbuf_adds(&sb, "\",version=\"" CW_VERSION "\"} 1\n");
	render_self(&sb);
	strbuf_addf(&sb,
		    "# HELP causeway_http_requests_total Requests received by the API.\n"
		    "# TYPE causeway_http_requests_total counter\n"
		    "causeway_http_requests_total %llu\n"
		    "# HELP causeway_http_rejected_total Requests refused by the auth gate.\n"
		    "# TYPE causeway_http_rejected_total counter\n"
		    "causeway_http_rejected_total %llu\n"
		    "# HELP causeway_http_errors_total Requests answered with a 5xx status.\n"
		    "# TYPE causeway_http_errors_total counter\n"
		    "causeway_http_errors_total %llu\n"
		    "# HELP causeway_http_read_timeouts_total Connections closed because a whole "
		    "request did not arrive within the read timeout.\n"
		    "# TYPE causeway_http_read_timeouts_total counter\n"
		    "causeway_http_read_timeouts_total %llu\n",
		    (unsigned long long)atomic_load(&s->requests),
		    (unsigned long long)atomic_load(&s->rejected),
		    (unsigned long long)atomic_load(&s->errors),
		    (unsigned long long)atomic_load(&s->dl.closed));
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
	rc = cw_metrics_store_counters(db, &sb);
	if (!rc)
		rc = cw_metrics_store_chains(db, &sb);
	if (!rc)
		rc = cw_metrics_store_host(db, &sb);
	if (!rc) {
		struct cw_live_metrics *live = atomic_load(&s->live);

		/* One source per family: the live session's per-process view
		 * while tracing, else the whole store's aggregates. */
		if (live) {
			rc = cw_live_metrics_render(live, s->node, cw_monotonic_ns(), &sb);
			render_bpf(&sb, s->node);
			if (!rc && atomic_load(&s->wlag))
				rc = cw_writer_lag_render(atomic_load(&s->wlag), s->node, cw_monotonic_ns(), &sb);
		} else {
			rc = cw_metrics_store_ops(db, &sb);
			if (!rc)
				rc = cw_metrics_store_failures(db, &sb);
		}
	}
	if (!rc)
		rc = cw_metrics_render_nccl(db, &sb);
	if (!rc)
		rc = cw_metrics_render_gpu(db, &sb);
	if (!rc)
		rc = cw_metrics_render_pressure(db, &sb);
	if (!rc)
		rc = cw_metrics_render_inference(db, &sb);
	cw_server_close_db(db);
	if (rc || sb.overflow) {
		strbuf_release(&sb);
		char why[256];

		cw_reply_error(r, 500, "cannot render metrics: %s",
			       rc ? cw_store_read_strerror(NULL, rc, why, sizeof(why)) : "larger than 16 MiB");
		return;
	}
	r->status = 200;
	r->ctype = "text/plain; version=0.0.4; charset=utf-8";
	r->len = sb.len;
	r->body = strbuf_detach(&sb);
	if (!r->body)
		r->body = strdup("");
}
