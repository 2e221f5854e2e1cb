/* The batched writer (writer.h): its life cycle, events counted into
 * batches, a full batch or a flush committed with its aggregates. */
#include "store/writer_core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/footprint.h"
#include "store/retention.h"

#define DEFAULT_BATCH_ROWS 50000
/* Calls between the caller's thread and the writer thread: 16384 rows of
 * 136 bytes, 2.2 MB; a quarter second of SQLite's rate here. */
#define DEFAULT_QUEUE_ROWS 16384

/* Under a cap the WAL is bounded too: checkpointed once it holds its
 * share of the cap (footprint.h; SQLite's default, 1000 pages of 16 KiB,
 * is 16 MiB: more than a small cap) and cut back to that size after the
 * checkpoint. The database's pages in use are pruned to its own share, and
 * a transaction holds at most its share of rows, so database, WAL and the
 * reserve file together stay within the cap (docs/trace.md "Size cap"). */
static int bound_wal(struct cw_writer *w)
{
	int64_t page = 16384;
	struct cw_footprint f;
	sqlite3_stmt *s;
	char sql[96];
	int err;

	if (sqlite3_prepare_v2(w->db, "PRAGMA page_size", -1, &s, NULL) == SQLITE_OK) {
		if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int64(s, 0) > 0)
			page = sqlite3_column_int64(s, 0);
		sqlite3_finalize(s);
	}
	cw_footprint_plan(w->size_cap, page, &f);
	w->db_budget = f.db;
	/* A call's row and its index entries take ~60 bytes; the first
	 * batches' bytes per row refine it (cap_tx_learn). */
	w->cap_tx_rows = (int)(f.tx / 64 > 1000 ? f.tx / 64 : 1000);
	snprintf(sql, sizeof(sql), "PRAGMA wal_autocheckpoint = %lld", (long long)(f.wal / page));
	err = cw_exec(w->db, sql);
	if (err)
		return err;
	snprintf(sql, sizeof(sql), "PRAGMA journal_size_limit = %lld", (long long)f.wal);
	return cw_exec(w->db, sql);
}

/* Under a cap: the WAL back into the database and cut to its share
 * (journal_size_limit); a reader's snapshot may keep part of it, then the
 * next checkpoint does. */
static void checkpoint(struct cw_writer *w)
{
	if (sqlite3_wal_checkpoint_v2(w->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL) != SQLITE_OK)
		sqlite3_wal_checkpoint_v2(w->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
}

int cw_writer_new(struct cw_writer **out, struct cw_store *store, const struct cw_writer_opts *o)
{
	struct cw_writer *w;
	int i, err;

	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->store = store;
	w->db = store->db;
	w->node = strdup(o->node && *o->node ? o->node : "localhost");
	w->session_id = o->session_id;
	w->batch_rows = o->batch_rows > 0 ? o->batch_rows : DEFAULT_BATCH_ROWS;
	w->immediate = o->immediate;
	w->size_cap = o->size_cap_bytes;
	w->ops = calloc(MAX_OPS, sizeof(*w->ops));
	u64map_init(&w->agg_index, 0);
	u64map_init(&w->stack_ids, 1 << 20);
	u64map_init(&w->pystack_ids, 1 << 20);
	if (!w->node || !w->ops || cw_keycache_init(&w->threads) || cw_strcache_init(&w->strings) ||
	    cw_argcache_init(&w->args)) {
		err = -ENOMEM;
		goto fail;
	}
	if (w->size_cap > 0 && (err = bound_wal(w)))
		goto fail;
	/* A new file's schema is a WAL of ~60 pages until a checkpoint. */
	if (w->size_cap > 0)
		checkpoint(w);
	/* The cap a session ran under, beside what it pruned. */
	if (w->size_cap > 0)
		cw_writer_counter_set(w, "store.size_cap", (uint64_t)w->size_cap);
	for (i = 0; i < ST_MAX; i++) {
		err = writer_prepare(w, (enum stmt_id)i);
		if (err)
			goto fail;
	}
	err = writer_load_next_seq(w);
	if (err)
		goto fail;
	if (o->threaded) {
		pthread_mutexattr_t ma;

		err = cw_callq_init(&w->q, sizeof(struct pending_event),
				    o->queue_rows > 0 ? (size_t)o->queue_rows : DEFAULT_QUEUE_ROWS);
		if (err)
			goto fail;
		pthread_mutexattr_init(&ma);
		pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
		pthread_mutex_init(&w->mu, &ma);
		pthread_mutexattr_destroy(&ma);
		w->threaded = 1;
		err = -pthread_create(&w->thr, NULL, writer_main, w);
		if (err)
			goto fail;
		w->thr_started = 1;
	}
	*out = w;
	return 0;
fail:
	cw_writer_free(w);
	return err;
}

int cw_writer_free(struct cw_writer *w)
{
	int i, err = 0;

	if (!w)
		return 0;
	if (w->st[ST_EVENT]) {
		uint64_t pruned = w->stats.pruned_events + w->stats.pruned_evidence + w->stats.pruned_context;

		err = cw_writer_flush(w);
		/* Counters are written with a batch; what this last one pruned
		 * is counted in one more, so every pruned row is stored. */
		if (!err && w->stats.pruned_events + w->stats.pruned_evidence + w->stats.pruned_context != pruned)
			err = cw_writer_flush(w);
	}
	if (w->thr_started) {
		cw_callq_close(&w->q);
		pthread_join(w->thr, NULL);
	}
	if (w->threaded) {
		cw_callq_destroy(&w->q);
		pthread_mutex_destroy(&w->mu);
	}
	for (i = 0; i < ST_MAX; i++)
		sqlite3_finalize(w->st[i]);
	for (i = 0; i < w->nops; i++) {
		if (w->ops[i].owns_source)
			free(w->ops[i].source);
		free(w->ops[i].op);
	}
	for (i = 0; i < w->ncounters; i++)
		free(w->counters[i].name);
	writer_requests_free(w);
	cw_keycache_free(&w->threads);
	cw_strcache_free(&w->strings);
	cw_argcache_free(&w->args);
	free(w->ops);
	free(w->aggs);
	free(w->folds);
	u64map_free(&w->agg_index);
	u64map_free(&w->stack_ids);
	u64map_free(&w->pystack_ids);
	free(w->node);
	free(w);
	return err;
}

void cw_writer_get_stats(const struct cw_writer *w, struct cw_writer_stats *out)
{
	struct cw_writer *mw = (struct cw_writer *)w;

	if (mw->threaded)
		pthread_mutex_lock(&mw->mu);
	*out = w->stats;
	if (mw->threaded) {
		pthread_mutex_unlock(&mw->mu);
		cw_callq_stats(&mw->q, &out->backpressure_waits, &out->backpressure_ns);
	}
}

/* After a commit, under a cap: the database's pages in use pruned to its
 * share (footprint.h), the WAL checkpointed before and after. */
static int enforce_cap(struct cw_writer *w)
{
	int err = 0;

	if (w->size_cap > 0 && cw_store_used_bytes(w->store) > w->db_budget) {
		struct cw_retention_counts rc = { 0 };

		/* The batch's pages out of the WAL first: the deletes' pages
		 * come on top of them otherwise. */
		checkpoint(w);
		err = cw_retention_enforce_tiers(w->store, w->db_budget, (int64_t)CW_RETENTION_WINDOW_NS, &rc);
		if (!err)
			checkpoint(w);
		/* Retention drops thread rows of old stretches. */
		cw_keycache_clear(&w->threads);
		if (rc.requests > 0 || rc.engine_metrics > 0) {
			w->stats.pruned_requests += (uint64_t)rc.requests;
			w->stats.pruned_requests_kept += (uint64_t)rc.requests_kept;
			w->stats.pruned_engine_metrics += (uint64_t)rc.engine_metrics;
			cw_writer_counter_set(w, "store.pruned.requests", w->stats.pruned_requests);
			cw_writer_counter_set(w, "store.pruned.requests_kept", w->stats.pruned_requests_kept);
			cw_writer_counter_set(w, "store.pruned.engine_metrics", w->stats.pruned_engine_metrics);
		}
		if (rc.events > 0 || rc.evidence > 0 || rc.context > 0 || rc.chains > 0) {
			w->stats.pruned_events += (uint64_t)rc.events;
			w->stats.pruned_ordinary += (uint64_t)rc.ordinary;
			w->stats.pruned_evidence += (uint64_t)rc.evidence;
			w->stats.pruned_recent += (uint64_t)rc.recent;
			w->stats.pruned_kept += (uint64_t)rc.kept;
			w->stats.pruned_context += (uint64_t)rc.context;
			w->stats.pruned_chains += (uint64_t)rc.chains;
			cw_writer_counter_set(w, "store.pruned_events", w->stats.pruned_events);
			cw_writer_counter_set(w, "store.pruned.ordinary", w->stats.pruned_ordinary);
			cw_writer_counter_set(w, "store.pruned.evidence", w->stats.pruned_evidence);
			cw_writer_counter_set(w, "store.pruned.recent", w->stats.pruned_recent);
			cw_writer_counter_set(w, "store.pruned.kept", w->stats.pruned_kept);
			cw_writer_counter_set(w, "store.pruned.context", w->stats.pruned_context);
			if (w->stats.pruned_chains)
				cw_writer_counter_set(w, "store.pruned.chains", w->stats.pruned_chains);
			/* Where explain starts to read kept rows only (docs/schema.md). */
			if (rc.through_wall_ns > w->stats.pruned_through_wall_ns)
				w->stats.pruned_through_wall_ns = rc.through_wall_ns;
			if (w->stats.pruned_through_wall_ns)
				cw_writer_counter_set(w, "store.pruned_through_wall_ns",
						      (uint64_t)w->stats.pruned_through_wall_ns);
		}
	}
	return err;
}

int cw_writer_flush(struct cw_writer *w)
{
	int err, e;

	if (w->threaded) {
		uint64_t waits, ns;

		if (w->api_depth) {
			w->flush_due = 1;
			return 0;
		}
		/* Every queued call is in the open transaction before it
		 * commits, with the aggregates of the same calls. */
		cw_callq_drain(&w->q);
		cw_callq_stats(&w->q, &waits, &ns);
		cw_writer_counter_set(w, "store.backpressure_waits", waits);
		cw_writer_counter_set(w, "store.backpressure_ns", ns);
		writer_sync_gen(w);
	}
	WLOCK(w);
	w->flush_due = 0;
	err = writer_begin(w);
	if (err)
		return err;
	err = writer_drain_events(w);
	if (w->async_err) {
		if (!err)
			err = w->async_err;
		w->async_err = 0;
	}
	/* Rows the store refused are losses too: counted where trace's other
	 * losses are (the counter survives even when this batch fails). The
	 * stored count is the base readers compute a loss share against. */
	if (w->stats.failed_rows)
		cw_writer_counter_set(w, "store.failed_rows", w->stats.failed_rows);
	cw_writer_counter_set(w, "store.events", w->stats.events);
	if (w->stats.requests)
		cw_writer_counter_set(w, "store.requests", w->stats.requests);
	if (w->stats.requests_other_route)
		cw_writer_counter_set(w, "store.requests_other_route", w->stats.requests_other_route);
	if (w->stats.engine_metrics)
		cw_writer_counter_set(w, "store.engine_metrics", w->stats.engine_metrics);
	e = writer_write_pending(w);
	if (e) {
		writer_note_error(w, e);
		if (!err)
			err = e;
	}
	e = writer_commit(w);
	if (!err)
		err = e;
	if (!err)
		err = enforce_cap(w);
	return err;
}

/* Counts a row toward the batch: commits when the batch is full.
 * Aggregates are written with the batch so they never run ahead of the
 * events. */
static inline int batch_tick(struct cw_writer *w)
{
	if (++w->rows_in_batch < writer_batch_limit(w))
		return 0;
	/* A flush waits for the writer thread, which needs mu: not while a
	 * public function holds it. */
	if (w->threaded && w->api_depth) {
		w->flush_due = 1;
		/* Under a cap, rows of the public functions alone (processes,
		 * names, intervals: a trace's start-up writes thousands before
		 * any call) commit here when no call is queued, and are pruned;
		 * the aggregates wait for the next flush, never ahead of their
		 * calls. */
		if (w->size_cap > 0 && w->in_tx && cw_callq_idle(&w->q)) {
			int err = writer_commit(w);

			return err ? err : enforce_cap(w);
		}
		return 0;
	}
	return cw_writer_flush(w);
}

/* Called after every row but events (which count themselves when
 * stored, in writer_insert_events). */
int writer_row_done(struct cw_writer *w, int err)
{
	if (err)
		return writer_row_failed(w, err);
	w->tx_rows++;
	return batch_tick(w);
}

/* Threaded mode: everything but the insert of a call happens here, on the
 * caller's thread; the call's row goes to the writer thread through q. */
static int event_threaded(struct cw_writer *w, const struct cw_event_row *r)
{
	int err, opi, anomalous = 0;
	int64_t id, seq;

	writer_sync_gen(w);
	opi = writer_op_index(w, r->source, r->op);
	if (opi < 0) {
		WLOCK(w);
		return writer_row_done(w, opi);
	}
	/* A failing call's latency is the failure path's, not the op's: it
	 * is counted apart (aggregates.errors) and never judged slow. */
	if ((r->duration_ns || r->has_ret) && !writer_call_failed(&w->ops[opi], r))
		anomalous = writer_is_anomalous(&w->ops[opi], r->duration_ns);
	err = writer_aggregate(w, opi, r);
	id = w->next_id++;
	seq = w->next_seq++;
	if (!err && !w->ops[opi].is_call) {
		WLOCK(w);
		err = writer_begin(w);
		if (!err)
			err = writer_insert_kevent(w, r, opi, anomalous, id, seq);
		if (!err) {
			w->stats.events++;
			w->tx_events++;
		}
		return writer_row_done(w, err);
	}
	if (!err)
		err = writer_queue_call(w, r, opi, anomalous, id, seq);
	if (err) {
		WLOCK(w);
		return writer_row_done(w, err);
	}
	if (++w->rows_in_batch >= writer_batch_limit(w) || w->flush_due)
		return cw_writer_flush(w);
	return 0;
}

int cw_writer_event(struct cw_writer *w, const struct cw_event_row *r)
{
	int err, opi, anomalous = 0;
	int64_t id, seq;

	if (w->threaded)
		return event_threaded(w, r);
	err = writer_begin(w);
	if (err)
		return writer_row_done(w, err);
	opi = writer_op_index(w, r->source, r->op);
	if (opi < 0)
		return writer_row_done(w, opi);
	/* Instant events (exec, retransmit) have no latency to judge; a
	 * failing call's latency is the failure path's, counted apart. */
	if ((r->duration_ns || r->has_ret) && !writer_call_failed(&w->ops[opi], r))
		anomalous = writer_is_anomalous(&w->ops[opi], r->duration_ns);
	err = writer_aggregate(w, opi, r);
	if (err)
		return writer_row_done(w, err);
	id = w->next_id++;
	seq = w->next_seq++;
	if (!w->ops[opi].is_call) {
		err = writer_insert_kevent(w, r, opi, anomalous, id, seq);
		if (!err) {
			w->stats.events++;
			w->tx_events++;
		}
		return writer_row_done(w, err);
	}
	err = writer_queue_call(w, r, opi, anomalous, id, seq);
	if (err)
		return writer_row_done(w, err);
	if (w->npend == EVENTS_PER_STMT) {
		/* writer_writer_drain_events() counts the rows it stores or fails. */
		err = writer_drain_events(w);
		if (err)
			return err;
	}
	return batch_tick(w);
}
