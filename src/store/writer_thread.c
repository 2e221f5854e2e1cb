/* Threaded mode (cw_writer_opts.threaded): the writer thread inserts
 * the calls the caller's thread queued. */
#include "store/writer_core.h"

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
