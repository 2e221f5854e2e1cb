/* Per op: its running median (the anomaly flag) and its per-second
 * aggregates; the session's counters. Written with each batch. */
#include "store/writer_core.h"

#include "gpu/call_errors.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* An event is anomalous when slower than this multiple of its op's running
 * median, once the op has enough samples for the median to mean something. */
#define ANOMALY_FACTOR 3
#define ANOMALY_MIN_SAMPLES 32

int writer_op_index(struct cw_writer *w, const char *source, const char *op)
{
	int i, j;

	/* Ops are few (tens); a linear scan beats a map. */
	for (i = 0; i < w->nops; i++)
		if (w->ops[i].op[0] == op[0] && !strcmp(w->ops[i].op, op) && !strcmp(w->ops[i].source, source))
			return i;
	if (w->nops >= MAX_OPS)
		return -ENOSPC;
	/* One copy per source, so an event row re-binds the source column
	 * only when the source changes (bind_event compares pointers). */
	for (j = 0; j < w->nops; j++)
		if (!strcmp(w->ops[j].source, source))
			break;
	w->ops[i].owns_source = j == w->nops;
	w->ops[i].source = w->ops[i].owns_source ? strdup(source) : w->ops[j].source;
	w->ops[i].op = strdup(op);
	if (!w->ops[i].source || !w->ops[i].op) {
		if (w->ops[i].owns_source)
			free(w->ops[i].source);
		free(w->ops[i].op);
		return -ENOMEM;
	}
	w->ops[i].is_call = !strcmp(source, "cuda") || !strcmp(source, "driver") || !strcmp(source, "graph") ||
			    !strcmp(source, "nccl");
	w->ops[i].db_id = 0;
	w->ops[i].source_len = (int)strlen(source);
	w->ops[i].op_len = (int)strlen(op);
	cw_hist_reset(&w->ops[i].all);
	w->nops++;
	return i;
}

/* The aggregates are per wall-clock second (what query and /metrics show). */
static int64_t wall_second(const struct cw_event_row *r)
{
	return (int64_t)(r->wall_ns / 1000000000ULL);
}

/* The pending aggregate of (op, second), created empty; NULL on ENOMEM. */
static struct agg *agg_slot(struct cw_writer *w, int opi, int64_t second)
{
	uint64_t key = ((uint64_t)second << 10) ^ (uint64_t)(opi + 1);
	int64_t idx;
	struct agg *a;

	if (!u64map_get(&w->agg_index, key, &idx)) {
		if (w->naggs == w->aggs_alloc) {
			size_t n = w->aggs_alloc ? w->aggs_alloc * 2 : 64;
			struct agg *p = realloc(w->aggs, n * sizeof(*p));

			if (!p)
				return NULL;
			w->aggs = p;
			w->aggs_alloc = n;
		}
		idx = (int64_t)w->naggs++;
		a = &w->aggs[idx];
		a->op_index = opi;
		a->second = second;
		a->errors = 0;
		cw_hist_reset(&a->h);
		if (u64map_put(&w->agg_index, key, idx))
			return NULL;
	}
	return &w->aggs[idx];
}

/* A failed call counts in errors only: the histogram, count, sum and max
 * describe the calls that succeeded (schema v10). */
static int agg_add(struct cw_writer *w, int opi, int64_t second, uint64_t dur, int failed)
{
	struct agg *a = agg_slot(w, opi, second);

	if (!a)
		return -ENOMEM;
	if (failed)
		a->errors++;
	else
		cw_hist_add(&a->h, dur);
	return 0;
}

/* The pending per-process fold of (pid, op, second), created empty: a
 * drain holds a few (processes x ops of one second), so a scan. */
static struct agg *fold_slot(struct cw_writer *w, int opi, uint32_t pid, int64_t second)
{
	struct agg *a;
	size_t i;

	for (i = 0; i < w->nfolds; i++)
		if (w->folds[i].op_index == opi && w->folds[i].pid == pid && w->folds[i].second == second)
			return &w->folds[i];
	if (w->nfolds == w->folds_alloc) {
		size_t n = w->folds_alloc ? w->folds_alloc * 2 : 16;
		struct agg *p = realloc(w->folds, n * sizeof(*p));

		if (!p)
			return NULL;
		w->folds = p;
		w->folds_alloc = n;
	}
	a = &w->folds[w->nfolds++];
	a->op_index = opi;
	a->pid = pid;
	a->second = second;
	a->errors = 0;
	cw_hist_reset(&a->h);
	return a;
}

int cw_writer_folded(struct cw_writer *w, uint32_t pid, const char *source, const char *op, int64_t second,
		     const struct cw_hist *h)
{
	int opi = writer_op_index(w, source, op);
	struct agg *a, *f;

	if (opi < 0)
		return opi;
	a = agg_slot(w, opi, second);
	f = fold_slot(w, opi, pid, second);
	if (!a || !f)
		return -ENOMEM;
	cw_hist_merge(&a->h, h);
	cw_hist_merge(&f->h, h);
	/* The anomaly median sees every call, folded or not. */
	cw_hist_merge(&w->ops[opi].all, h);
	w->ops[opi].since_refresh = 64;
	return 0;
}

uint64_t cw_writer_op_median(const struct cw_writer *w, const char *source, const char *op)
{
	int i;

	for (i = 0; i < w->nops; i++)
		if (!strcmp(w->ops[i].op, op) && !strcmp(w->ops[i].source, source))
			return w->ops[i].all.count < ANOMALY_MIN_SAMPLES ? 0 : cw_hist_quantile(&w->ops[i].all, 0.5);
	return 0;
}

int writer_is_anomalous(struct op_state *s, uint64_t dur)
{
	cw_hist_add(&s->all, dur);
	if (s->all.count < ANOMALY_MIN_SAMPLES)
		return 0;
	/* The median moves slowly; refreshing it every 64 samples keeps the
	 * per-event cost to one histogram add. */
	if (!s->cached_p50 || ++s->since_refresh >= 64) {
		s->cached_p50 = cw_hist_quantile(&s->all, 0.5);
		s->since_refresh = 0;
	}
	return dur > ANOMALY_FACTOR * s->cached_p50;
}

int writer_call_failed(const struct op_state *s, const struct cw_event_row *r)
{
	return s->is_call && r->has_ret && cw_call_failed(s->source, s->op, r->ret);
}

int writer_aggregate(struct cw_writer *w, int opi, const struct cw_event_row *r)
{
	return agg_add(w, opi, wall_second(r), r->duration_ns, writer_call_failed(&w->ops[opi], r));
}

static struct counter *counter_slot(struct cw_writer *w, const char *name)
{
	int i;

	for (i = 0; i < w->ncounters; i++)
		if (!strcmp(w->counters[i].name, name))
			return &w->counters[i];
	if (w->ncounters >= MAX_COUNTERS)
		return NULL;
	w->counters[i].name = strdup(name);
	if (!w->counters[i].name)
		return NULL;
	w->counters[i].value = 0;
	w->counters[i].pending = 0;
	w->counters[i].lost = -1;
	w->ncounters++;
	return &w->counters[i];
}

void cw_writer_counter_set(struct cw_writer *w, const char *name, uint64_t value)
{
	WLOCK(w);
	struct counter *c = counter_slot(w, name);

	if (c)
		c->value = value;
}

void cw_writer_counter_add_committed(struct cw_writer *w, const char *name, const char *lost_name, uint64_t n)
{
	WLOCK(w);
	struct counter *c, *l;

	if (!(c = counter_slot(w, name)) || !n)
		return;
	/* The connection's own state, not in_tx: a batch SQLite rolled back
	 * by itself is not one the rows went into. */
	if (sqlite3_get_autocommit(w->db)) {
		c->value += n;
		return;
	}
	/* counters[] never moves: c stays where it is. */
	l = counter_slot(w, lost_name);
	c->pending += n;
	c->lost = l ? (int)(l - w->counters) : -1;
}

void writer_settle_counters(struct cw_writer *w, int committed)
{
	for (int i = 0; i < w->ncounters; i++) {
		struct counter *c = &w->counters[i];

		if (!c->pending)
			continue;
		if (committed)
			c->value += c->pending;
		else if (c->lost >= 0)
			w->counters[c->lost].value += c->pending;
		c->pending = 0;
	}
}

/* Merges one pending aggregate into its row (a second can span flushes);
 * fold: a per-process row of the folded table. */
static int write_agg(struct cw_writer *w, const struct agg *a, int fold)
{
	struct op_state *o = &w->ops[a->op_index];
	sqlite3_stmt *g = w->st[fold ? ST_FOLD_GET : ST_AGG_GET], *p = w->st[fold ? ST_FOLD_PUT : ST_AGG_PUT];
	uint8_t buf[CW_HIST_ENCODED_MAX];
	struct cw_hist h = a->h;
	uint64_t errors = a->errors;
	int rc, n;

	sqlite3_bind_text(g, 1, w->node, -1, SQLITE_STATIC);
	sqlite3_bind_text(g, 2, o->source, -1, SQLITE_STATIC);
	sqlite3_bind_text(g, 3, o->op, -1, SQLITE_STATIC);
	sqlite3_bind_int64(g, 4, a->second);
	if (fold)
		sqlite3_bind_int64(g, 9, a->pid);
	rc = sqlite3_step(g);
	if (rc == SQLITE_ROW) {
		cw_hist_decode_merge(&h, sqlite3_column_blob(g, 3), (size_t)sqlite3_column_bytes(g, 3),
				     (uint64_t)sqlite3_column_int64(g, 0), (uint64_t)sqlite3_column_int64(g, 1),
				     (uint64_t)sqlite3_column_int64(g, 2));
		if (!fold)
			errors += (uint64_t)sqlite3_column_int64(g, 4);
	}
	sqlite3_reset(g);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return cw_sqlite_db_errno(w->db, rc);
	n = cw_hist_encode(&h, buf, sizeof(buf));
	if (n < 0)
		return n;
	sqlite3_bind_text(p, 1, w->node, -1, SQLITE_STATIC);
	sqlite3_bind_text(p, 2, o->source, -1, SQLITE_STATIC);
	sqlite3_bind_text(p, 3, o->op, -1, SQLITE_STATIC);
	sqlite3_bind_int64(p, 4, a->second);
	sqlite3_bind_int64(p, 5, (int64_t)h.count);
	sqlite3_bind_int64(p, 6, (int64_t)h.sum_ns);
	sqlite3_bind_int64(p, 7, (int64_t)h.max_ns);
	sqlite3_bind_blob(p, 8, buf, n, SQLITE_TRANSIENT);
	if (fold)
		sqlite3_bind_int64(p, 9, a->pid);
	else
		sqlite3_bind_int64(p, 9, (int64_t)errors);
	return step_reset(p);
}

int writer_write_pending(struct cw_writer *w)
{
	size_t i;
	int err = 0, e;

	for (i = 0; i < w->naggs; i++) {
		e = write_agg(w, &w->aggs[i], 0);
		if (e && !err)
			err = e;
	}
	w->naggs = 0;
	for (i = 0; i < w->nfolds; i++) {
		e = write_agg(w, &w->folds[i], 1);
		if (e && !err)
			err = e;
	}
	w->nfolds = 0;
	u64map_clear(&w->agg_index);
	if (w->session_id) {
		int c;

		for (c = 0; c < w->ncounters; c++) {
			sqlite3_stmt *s = w->st[ST_COUNTER];

			sqlite3_bind_text(s, 1, w->node, -1, SQLITE_STATIC);
			sqlite3_bind_int64(s, 2, w->session_id);
			sqlite3_bind_text(s, 3, w->counters[c].name, -1, SQLITE_STATIC);
			sqlite3_bind_int64(s, 4, (int64_t)(w->counters[c].value + w->counters[c].pending));
			e = step_reset(s);
			if (e && !err)
				err = e;
		}
	}
	return err;
}
