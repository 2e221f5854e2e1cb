/* Threaded mode (cw_writer_opts.threaded): the caller's thread does all
 * but the insert of a call, which the writer thread does. */
#include "store/writer_int.h"

/* Threaded mode: everything but the insert of a call happens here, on the
 * caller's thread; the call's row goes to the writer thread through q. */
int writer_event_threaded(struct cw_writer *w, const struct cw_event_row *r)
{
	int err, opi, anomalous = 0;
	int64_t id, seq;

	writer_sync_gen(w);
	opi = writer_op_index(w, r->source, r->op);
	if (opi < 0) {
		WLOCK(w);
		return writer_row_done(w, opi);
	}
	if (r->duration_ns || r->has_ret)
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
	if (++w->rows_in_batch >= w->batch_rows || w->flush_due)
		return cw_writer_flush(w);
	return 0;
}

/* The writer thread: inserts queued calls, a full statement at a time
 * (fewer only when a flush drains the queue). */
void *writer_main(void *arg)
{
	struct cw_writer *w = arg;
	size_t n, i, k;
	int err;

	while ((n = cw_callq_pop(&w->q, w->wpend, EVENTS_PER_STMT, EVENTS_PER_STMT)) > 0) {
		pthread_mutex_lock(&w->mu);
		for (i = k = 0; i < n; i++) {
			if (w->wpend[i].gen != __atomic_load_n(&w->gen, __ATOMIC_ACQUIRE)) {
				w->stats.failed_rows++;
				continue;
			}
			if (k != i)
				w->wpend[k] = w->wpend[i];
			k++;
		}
		err = k ? writer_begin(w) : 0;
		if (err) {
			w->stats.failed_rows += k;
		} else if (k == EVENTS_PER_STMT) {
			err = writer_insert_events(w, w->st[ST_EVENT_MULTI], w->bound_multi, w->wpend, (int)k);
		} else {
			for (i = 0; i < k && !err; i++)
				err = writer_insert_events(w, w->st[ST_EVENT], &w->bound_one, &w->wpend[i], 1);
			if (err)
				w->stats.failed_rows += k - i;
		}
		if (err && !w->async_err)
			w->async_err = err;
		pthread_mutex_unlock(&w->mu);
		cw_callq_done(&w->q);
	}
	return NULL;
}
