/* The writer's transaction: one batch of rows, and what a lost one takes
 * with it; the lock of threaded mode. */
#include "store/writer_core.h"

#include <errno.h>

#include "store/sqlite_util.h"

void cw_writer_db_lock(struct cw_writer *w)
{
	if (w)
		wlock(w);
}

void cw_writer_db_unlock(struct cw_writer *w)
{
	if (w)
		wunlock(&w);
}

/* Interned rows written in a transaction that rolled back are gone: their
 * ids must not be handed to later rows. */
static void forget_keys(struct cw_writer *w)
{
	cw_keycache_clear(&w->threads);
	cw_strcache_clear(&w->strings);
	cw_argcache_clear(&w->args);
	for (int i = 0; i < w->nops; i++)
		w->ops[i].db_id = 0;
}

/* The open transaction is gone: what it stored is counted as failed and
 * no longer as stored. */
void writer_lose_tx(struct cw_writer *w)
{
	if (w->threaded) {
		/* The caches belong to the caller's thread (see gen). */
		__atomic_add_fetch(&w->gen, 1, __ATOMIC_RELEASE);
	} else {
		/* Stacks interned in the lost transaction are gone too: their
		 * ids must not be handed to later rows. */
		u64map_clear(&w->stack_ids);
		u64map_clear(&w->pystack_ids);
		forget_keys(w);
		/* Calls queued for the next statement name thread, op and
		 * string rows of the lost transaction: lost with it. */
		w->stats.failed_rows += (uint64_t)w->npend;
		w->npend = 0;
	}
	writer_settle_counters(w, 0);
	w->stats.failed_rows += w->tx_rows;
	w->stats.events -= w->tx_events;
	w->stats.offcpu -= w->tx_offcpu;
	w->stats.snapshots -= w->tx_snapshots;
	w->stats.requests -= w->tx_requests;
	w->stats.requests_other_route -= w->tx_req_other;
	w->stats.engine_metrics -= w->tx_engine;
	w->tx_rows = w->tx_events = w->tx_offcpu = w->tx_snapshots = 0;
	w->tx_requests = w->tx_req_other = w->tx_engine = 0;
	/* Routes first counted in it are gone from request_totals. */
	w->routes_loaded = 0;
	w->in_tx = 0;
	w->rows_in_batch = 0;
	/* A session row written in it is gone as well: written again. */
	if (w->session_in_tx)
		w->session_id = 0;
	w->session_in_tx = 0;
}

/* After a failed statement: SQLite rolls the whole transaction back by
 * itself on some errors (SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM), and
 * a COMMIT issued then would fail with "no transaction is active". */
void writer_note_error(struct cw_writer *w, int err)
{
	w->stats.last_error = err;
	w->stats.failing = 1;
	if (w->in_tx && sqlite3_get_autocommit(w->db))
		writer_lose_tx(w);
}

/* Opens the batch (writer_begin when none is open). */
int writer_begin_tx(struct cw_writer *w)
{
	int err;

	if (w->in_tx)
		return 0;
	err = cw_exec(w->db, w->immediate ? "BEGIN IMMEDIATE" : "BEGIN");
	if (err) {
		/* A lock held by another writer is no failure of ours. */
		if (err != -EBUSY)
			writer_note_error(w, err);
		return err;
	}
	w->in_tx = 1;
	w->tx_rows = w->tx_events = w->tx_offcpu = w->tx_snapshots = 0;
	w->tx_requests = w->tx_req_other = w->tx_engine = 0;
	return 0;
}

int cw_writer_try_begin(struct cw_writer *w)
{
	WLOCK(w);
	return writer_begin(w);
}

int64_t cw_writer_session(const struct cw_writer *w)
{
	return w->session_id;
}

void cw_writer_set_session(struct cw_writer *w, int64_t session_id)
{
	w->session_id = session_id;
	/* The session is part of a thread row. */
	cw_keycache_clear(&w->threads);
}

int writer_commit(struct cw_writer *w)
{
	int err;

	if (!w->in_tx)
		return 0;
	err = cw_exec(w->db, "COMMIT");
	if (err) {
		if (!sqlite3_get_autocommit(w->db))
			cw_exec(w->db, "ROLLBACK");
		/* The batch's rows are gone with it. */
		writer_lose_tx(w);
		w->stats.last_error = err;
		w->stats.failing = 1;
		return err;
	}
	writer_settle_counters(w, 1);
	w->in_tx = 0;
	w->rows_in_batch = 0;
	w->tx_rows = w->tx_events = w->tx_offcpu = w->tx_snapshots = 0;
	w->tx_requests = w->tx_req_other = w->tx_engine = 0;
	w->session_in_tx = 0;
	w->stats.batches++;
	w->stats.failing = 0;
	return 0;
}

/* The caller's thread catches up with transactions lost since its last
 * call (lose_tx in threaded mode). */
void writer_sync_gen(struct cw_writer *w)
{
	uint32_t g;

	if (!w->threaded)
		return;
	g = __atomic_load_n(&w->gen, __ATOMIC_ACQUIRE);
	if (g == w->seen_gen)
		return;
	pthread_mutex_lock(&w->mu);
	u64map_clear(&w->stack_ids);
	u64map_clear(&w->pystack_ids);
	forget_keys(w);
	pthread_mutex_unlock(&w->mu);
	w->seen_gen = g;
}

int writer_row_failed(struct cw_writer *w, int err)
{
	w->stats.failed_rows++;
	writer_note_error(w, err);
	return err;
}
