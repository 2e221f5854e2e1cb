/* Events: a call queued for the next multi-row statement into calls, a
 * kernel-side event into kevents at once. */
#include "store/writer_int.h"

#include <string.h>

/* Keeps the first SQLite error of several calls in rc. */
#define KEEP_RC(rc, call)                     \
	do {                                  \
		int rc_ = (call);             \
		if (rc_ != SQLITE_OK && (rc) == SQLITE_OK) \
			(rc) = rc_;           \
	} while (0)

/* Binds one pending call as the row whose first parameter is b, skipping
 * the parameters whose bound value is unchanged (br). */
static int bind_event(sqlite3_stmt *s, int b, struct bound_row *br, const struct pending_event *pe)
{
	uint32_t nulls = pe->nulls, diff;
	int p, rc = SQLITE_OK;

	/* NULL parameters hold 0 in v[], so one compare per parameter finds
	 * what changed (the loop vectorizes). */
	diff = br->valid ? br->nulls ^ nulls : ~0u;
	for (p = 0; p < EVENT_ROW_PARAMS; p++)
		diff |= (uint32_t)(br->v[p] != pe->v[p]) << p;
	diff &= (1u << EVENT_ROW_PARAMS) - 1;
	while (diff) {
		p = __builtin_ctz(diff);
		diff &= diff - 1;
		KEEP_RC(rc, (nulls >> p & 1) ? sqlite3_bind_null(s, b + p) : sqlite3_bind_int64(s, b + p, pe->v[p]));
	}
	memcpy(br->v, pe->v, sizeof(br->v));
	br->nulls = nulls;
	/* A failed bind leaves the parameter unknown: bind all next time. */
	br->valid = rc == SQLITE_OK;
	return rc;
}

/* Inserts n pending events with one step of s, whose rows' bindings are
 * br[0..n-1]; they take the next n sequence numbers when stored. */
int writer_insert_events(struct cw_writer *w, sqlite3_stmt *s, struct bound_row *br, struct pending_event *pe,
			 int n)
{
	int k, rc = SQLITE_OK;

	for (k = 0; k < n; k++)
		KEEP_RC(rc, bind_event(s, 1 + k * EVENT_ROW_PARAMS, &br[k], &pe[k]));
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(s);
		sqlite3_reset(s);
	}
	if (rc != SQLITE_DONE) {
		int err = cw_sqlite_db_errno(w->db, rc);

		w->stats.failed_rows += (uint64_t)n;
		writer_note_error(w, err);
		return err;
	}
	w->stats.events += (uint64_t)n;
	w->tx_events += (uint64_t)n;
	w->tx_rows += (uint64_t)n;
	return 0;
}

/* Writes every pending event: a full statement's worth with the multi-row
 * statement, a remainder (at a flush) one row at a time. */
int writer_drain_events(struct cw_writer *w)
{
	int i, n = w->npend, err = 0;

	/* Taken off the queue first: a failure below rolls back the thread
	 * and string rows the rest would name (lose_tx), so they are counted
	 * as failed here and never inserted. */
	w->npend = 0;
	if (n == EVENTS_PER_STMT)
		return writer_insert_events(w, w->st[ST_EVENT_MULTI], w->bound_multi, w->pend, n);
	for (i = 0; i < n && !err; i++)
		err = writer_insert_events(w, w->st[ST_EVENT], &w->bound_one, &w->pend[i], 1);
	if (err)
		w->stats.failed_rows += (uint64_t)(n - i);
	return err;
}

#define SET_OR_NULL(pe, p, cond, val)                 \
	do {                                           \
		if (cond)                              \
			(pe)->v[p] = (int64_t)(val);   \
		else                                   \
			(pe)->nulls |= 1u << (p);      \
	} while (0)

static void flatten_event(struct pending_event *pe, const struct cw_event_row *r, int anomalous)
{
	int i;

	memset(pe->v, 0, sizeof(pe->v));
	pe->nulls = 0;
	pe->v[EP_DURATION] = (int64_t)r->duration_ns;
	for (i = 0; i < 4; i++)
		SET_OR_NULL(pe, EP_ARG0 + i, i < r->nargs, r->args[i]);
	SET_OR_NULL(pe, EP_BYTES, r->has_bytes, r->bytes);
	SET_OR_NULL(pe, EP_RET, r->has_ret, r->ret);
	SET_OR_NULL(pe, EP_STACK, r->stack_id > 0, r->stack_id);
	SET_OR_NULL(pe, EP_PYSTACK, r->py_stack_id > 0, r->py_stack_id);
	pe->v[EP_ANOMALOUS] = anomalous;
}
#undef SET_OR_NULL

/* A call: its thread, op and detail interned, then queued for the next
 * multi-row statement. */
int writer_queue_call(struct cw_writer *w, const struct cw_event_row *r, int opi, int anomalous, int64_t id,
		      int64_t seq)
{
	struct pending_event *pe = &w->pend[w->npend];
	int64_t th, op, str = 0, ar;

	th = writer_thread_id(w, r);
	if (th < 0)
		return (int)th;
	ar = writer_args_id(w, r);
	if (ar < 0)
		return (int)ar;
	op = writer_op_id(w, &w->ops[opi]);
	if (op < 0)
		return (int)op;
	if (r->detail && (str = writer_string_id(w, r->detail)) < 0)
		return (int)str;
	flatten_event(pe, r, anomalous);
	pe->v[EP_ID] = id;
	pe->v[EP_TH] = th;
	pe->v[EP_OP] = op;
	pe->v[EP_T] = (int64_t)r->mono_ns - cw_tkey_base(r->mono_ns);
	if (str)
		pe->v[EP_DETAIL] = str;
	else
		pe->nulls |= 1u << EP_DETAIL;
	/* NULL when the sequence number is the id: the usual case. */
	if (seq != id)
		pe->v[EP_SEQ] = seq;
	else
		pe->nulls |= 1u << EP_SEQ;
	if (ar) {
		pe->v[EP_ARGS] = ar;
		for (int i = 0; i < 4; i++) {
			pe->v[EP_ARG0 + i] = 0;
			pe->nulls |= 1u << (EP_ARG0 + i);
		}
	} else {
		pe->nulls |= 1u << EP_ARGS;
	}
	if (w->threaded) {
		pe->gen = w->seen_gen;
		return cw_callq_push(&w->q, pe);
	}
	w->npend++;
	return 0;
}

/* A kernel-side event: the whole row into kevents at once. */
int writer_insert_kevent(struct cw_writer *w, const struct cw_event_row *r, int opi, int anomalous, int64_t id,
			 int64_t seq)
{
	sqlite3_stmt *s = w->st[ST_KEVENT];
	const struct op_state *o = &w->ops[opi];
	int i;

	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_text(s, 2, w->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, seq);
	if (w->session_id)
		sqlite3_bind_int64(s, 4, w->session_id);
	sqlite3_bind_int64(s, 5, (int64_t)r->wall_ns);
	sqlite3_bind_int64(s, 6, (int64_t)r->mono_ns);
	sqlite3_bind_int64(s, 7, r->pid);
	sqlite3_bind_int64(s, 8, r->tid);
	sqlite3_bind_int64(s, 9, (int64_t)r->cgroup_id);
	bind_text_or_null(s, 10, r->comm);
	sqlite3_bind_text(s, 11, o->source, o->source_len, SQLITE_STATIC);
	sqlite3_bind_text(s, 12, o->op, o->op_len, SQLITE_STATIC);
	sqlite3_bind_int64(s, 13, (int64_t)r->duration_ns);
	for (i = 0; i < 4 && i < r->nargs; i++)
		sqlite3_bind_int64(s, 14 + i, r->args[i]);
	if (r->has_bytes)
		sqlite3_bind_int64(s, 18, r->bytes);
	bind_text_or_null(s, 19, r->detail);
	if (r->has_ret)
		sqlite3_bind_int64(s, 20, r->ret);
	if (r->device >= 0)
		sqlite3_bind_int(s, 21, r->device);
	if (r->stack_id > 0)
		sqlite3_bind_int64(s, 22, r->stack_id);
	if (r->py_stack_id > 0)
		sqlite3_bind_int64(s, 23, r->py_stack_id);
	sqlite3_bind_int(s, 24, anomalous);
	return step_reset(s);
}

int cw_writer_event(struct cw_writer *w, const struct cw_event_row *r)
{
	int err, opi, anomalous = 0;
	int64_t id, seq;

	if (w->threaded)
		return writer_event_threaded(w, r);
	err = writer_begin(w);
	if (err)
		return writer_row_done(w, err);
	opi = writer_op_index(w, r->source, r->op);
	if (opi < 0)
		return writer_row_done(w, opi);
	/* Instant events (exec, retransmit) have no latency to judge. */
	if (r->duration_ns || r->has_ret)
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
	return writer_batch_tick(w);
}
