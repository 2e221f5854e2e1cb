/* Writer lag of a running trace session (see writer_lag.h). */
#define _GNU_SOURCE
#include "metrics/writer_lag.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/prom_text.h"

_Static_assert(sizeof(((struct cw_writer_lag_view *)0)->buckets) / sizeof(uint64_t) == CW_PROM_BUCKETS + 1,
	       "one bucket per /metrics latency bucket");

/* Rows pending commit, as runs of rows whose events ended within RUN_NS of
 * the run's first: a batch of 40,000 rows is a few hundred runs, and a
 * row's lag is read from its run's start, at most RUN_NS high. Past
 * MAX_RUNS, rows join the newest run. */
#define RUN_NS 1000000ULL
#define MAX_RUNS 4096

struct run {
	uint64_t t;
	uint64_t n;
};

struct cw_writer_lag {
	pthread_mutex_t lock;
	cw_writer_commits_fn poll;
	void *ctx;
	uint64_t commits; /* the count at the last poll */
	int polled;
	struct run runs[MAX_RUNS];
	unsigned nruns;
	uint64_t pending;
	uint64_t committed, sum_ns;
	uint64_t buckets[CW_PROM_BUCKETS + 1];
};

int cw_writer_lag_new(struct cw_writer_lag **out, cw_writer_commits_fn poll, void *ctx)
{
	struct cw_writer_lag *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	pthread_mutex_init(&l->lock, NULL);
	l->poll = poll;
	l->ctx = ctx;
	*out = l;
	return 0;
}

void cw_writer_lag_free(struct cw_writer_lag *l)
{
	if (!l)
		return;
	pthread_mutex_destroy(&l->lock);
	free(l);
}

/* Lock held: every pending row was committed by now. */
static void settle(struct cw_writer_lag *l, uint64_t now)
{
	for (unsigned i = 0; i < l->nruns; i++) {
		uint64_t lag = now > l->runs[i].t ? now - l->runs[i].t : 0;

		l->buckets[cw_prom_bucket(lag)] += l->runs[i].n;
		l->sum_ns += lag * l->runs[i].n;
		l->committed += l->runs[i].n;
	}
	l->nruns = 0;
	l->pending = 0;
}

/* Lock held. */
static void seen(struct cw_writer_lag *l, uint64_t commits, uint64_t now)
{
	if (l->polled && commits != l->commits)
		settle(l, now);
	l->commits = commits;
	l->polled = 1;
}

void cw_writer_lag_commits(struct cw_writer_lag *l, uint64_t commits, uint64_t now_mono_ns)
{
	pthread_mutex_lock(&l->lock);
	seen(l, commits, now_mono_ns);
	pthread_mutex_unlock(&l->lock);
}

void cw_writer_lag_row(struct cw_writer_lag *l, uint64_t event_mono_ns, uint64_t commits, uint64_t now_mono_ns)
{
	struct run *r;

	pthread_mutex_lock(&l->lock);
	seen(l, commits, now_mono_ns);
	r = l->nruns ? &l->runs[l->nruns - 1] : NULL;
	if (!r || (l->nruns < MAX_RUNS && (event_mono_ns < r->t || event_mono_ns - r->t >= RUN_NS))) {
		r = &l->runs[l->nruns++];
		r->t = event_mono_ns;
		r->n = 0;
	}
	r->n++;
	l->pending++;
	pthread_mutex_unlock(&l->lock);
}

int cw_writer_lag_read(struct cw_writer_lag *l, uint64_t now_mono_ns, struct cw_writer_lag_view *v)
{
	uint64_t commits = 0;
	int rc = l->poll ? l->poll(l->ctx, &commits) : -ENOSYS;

	/* The poll takes the writer's lock; ours is taken after it, as the
	 * consumer thread does (writer lock, then this one). */
	pthread_mutex_lock(&l->lock);
	if (!rc)
		seen(l, commits, now_mono_ns);
	memset(v, 0, sizeof(*v));
	v->pending_rows = l->pending;
	for (unsigned i = 0; i < l->nruns; i++)
		if (now_mono_ns > l->runs[i].t && now_mono_ns - l->runs[i].t > v->oldest_ns)
			v->oldest_ns = now_mono_ns - l->runs[i].t;
	v->committed_rows = l->committed;
	v->sum_ns = l->sum_ns;
	memcpy(v->buckets, l->buckets, sizeof(v->buckets));
	pthread_mutex_unlock(&l->lock);
	return rc;
}

int cw_writer_lag_render(struct cw_writer_lag *l, const char *node, uint64_t now_mono_ns, struct strbuf *sb)
{
	struct cw_writer_lag_view v;
	uint64_t cum = 0;

	(void)cw_writer_lag_read(l, now_mono_ns, &v);
	strbuf_adds(sb, "# HELP causeway_writer_lag_seconds Age of the oldest row handed to the store's writer "
			"and not committed yet (0: everything is committed).\n"
			"# TYPE causeway_writer_lag_seconds gauge\ncauseway_writer_lag_seconds{node=\"");
	cw_prom_escape_label(sb, node);
	strbuf_addf(sb, "\"} %.9g\n", (double)v.oldest_ns / 1e9);
	strbuf_adds(sb, "# HELP causeway_writer_pending_rows Rows handed to the store's writer and not "
			"committed yet (its queue depth).\n"
			"# TYPE causeway_writer_pending_rows gauge\ncauseway_writer_pending_rows{node=\"");
	cw_prom_escape_label(sb, node);
	strbuf_addf(sb, "\"} %llu\n", (unsigned long long)v.pending_rows);
	strbuf_adds(sb, "# HELP causeway_writer_commit_lag_seconds Per stored call or off-CPU interval: "
			"time from the end of the event to the commit that stored it.\n"
			"# TYPE causeway_writer_commit_lag_seconds histogram\n");
	for (unsigned b = 0; b <= CW_PROM_BUCKETS; b++) {
		cum += v.buckets[b];
		strbuf_adds(sb, "causeway_writer_commit_lag_seconds_bucket{node=\"");
		cw_prom_escape_label(sb, node);
		if (b < CW_PROM_BUCKETS)
			strbuf_addf(sb, "\",le=\"%.9g\"} %llu\n", cw_prom_bucket_le(b), (unsigned long long)cum);
		else
			strbuf_addf(sb, "\",le=\"+Inf\"} %llu\n", (unsigned long long)cum);
	}
	strbuf_adds(sb, "causeway_writer_commit_lag_seconds_sum{node=\"");
	cw_prom_escape_label(sb, node);
	strbuf_addf(sb, "\"} %.9g\n", (double)v.sum_ns / 1e9);
	strbuf_adds(sb, "causeway_writer_commit_lag_seconds_count{node=\"");
	cw_prom_escape_label(sb, node);
	strbuf_addf(sb, "\"} %llu\n", (unsigned long long)v.committed_rows);
	return sb->overflow ? -ENOMEM : 0;
}
