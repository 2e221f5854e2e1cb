/* Events: a call, its thread, op, detail and arguments interned, queued
 * for the next multi-row statement into calls; a kernel-side event into
 * kevents at once. */
#include "store/writer_core.h"

#include <errno.h>
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

/* Runs an interning statement already bound: the row id it inserted,
 * or for a SELECT the id it found (0 none). */
static int64_t step_id(struct cw_writer *w, sqlite3_stmt *s, int insert)
{
	int rc = sqlite3_step(s);
	int64_t id = 0;

	if (rc == SQLITE_ROW)
		id = sqlite3_column_int64(s, 0);
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return cw_sqlite_db_errno(w->db, rc);
	return insert ? sqlite3_last_insert_rowid(w->db) : id;
}

/* The call_threads row of a call: per thread identity, session and 2^31 ns
 * of monotonic time (so a call's offset from its base fits 4 bytes). */
static int64_t writer_thread_id(struct cw_writer *w, const struct cw_event_row *r)
{
	struct cw_tkey k = {
		.pid = r->pid,
		.tid = r->tid,
		.cgroup_id = r->cgroup_id,
		.device = r->device >= 0 ? r->device : -1,
		.mono_base = cw_tkey_base(r->mono_ns),
		.wall_off = (int64_t)(r->wall_ns - r->mono_ns),
		.comm = r->comm,
	};
	uint64_t h = cw_tkey_hash(&k);
	sqlite3_stmt *s = w->st[ST_TKEY_PUT];
	int64_t id;

	if (cw_keycache_get(&w->threads, &k, h, &id))
		return id;
	WLOCK(w);
	if ((id = writer_begin(w)))
		return id;
	sqlite3_bind_text(s, 1, w->node, -1, SQLITE_STATIC);
	if (w->session_id)
		sqlite3_bind_int64(s, 2, w->session_id);
	sqlite3_bind_int64(s, 3, k.pid);
	sqlite3_bind_int64(s, 4, k.tid);
	sqlite3_bind_int64(s, 5, (int64_t)k.cgroup_id);
	bind_text_or_null(s, 6, k.comm);
	if (k.device >= 0)
		sqlite3_bind_int(s, 7, k.device);
	sqlite3_bind_int64(s, 8, k.mono_base);
	sqlite3_bind_int64(s, 9, k.wall_off);
	id = step_id(w, s, 1);
	if (id > 0 && cw_keycache_put(&w->threads, &k, h, id))
		return -ENOMEM;
	return id;
}

static int64_t writer_op_id(struct cw_writer *w, struct op_state *o)
{
	sqlite3_stmt *s;
	int64_t id;

	if (o->db_id)
		return o->db_id;
	WLOCK(w);
	if ((id = writer_begin(w)))
		return id;
	s = w->st[ST_OP_PUT];
	sqlite3_bind_text(s, 1, o->source, o->source_len, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, o->op, o->op_len, SQLITE_STATIC);
	id = step_id(w, s, 1);
	if (id < 0)
		return id;
	s = w->st[ST_OP_GET];
	sqlite3_bind_text(s, 1, o->source, o->source_len, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, o->op, o->op_len, SQLITE_STATIC);
	id = step_id(w, s, 0);
	if (id > 0)
		o->db_id = id;
	return id ? id : -EIO;
}

/* The strings row of a detail text (kernel names repeat for every launch). */
static int64_t writer_string_id(struct cw_writer *w, const char *text)
{
	size_t len = strlen(text);
	uint64_t h = cw_str_hash(text, len);
	sqlite3_stmt *s;
	int64_t id;

	if (len > (1u << 30))
		return -E2BIG;
	if (cw_strcache_get(&w->strings, text, len, h, &id))
		return id;
	WLOCK(w);
	if ((id = writer_begin(w)))
		return id;
	s = w->st[ST_STR_GET];
	sqlite3_bind_text(s, 1, text, (int)len, SQLITE_STATIC);
	id = step_id(w, s, 0);
	if (!id) {
		s = w->st[ST_STR_PUT];
		sqlite3_bind_text(s, 1, text, (int)len, SQLITE_STATIC);
		id = step_id(w, s, 1);
	}
	/* A full cache only costs a lookup next time. */
	if (id > 0 && cw_strcache_put(&w->strings, text, len, h, id))
		return -ENOMEM;
	return id;
}

/* A call's argument tuple: interned on its second sighting (kernels are
 * launched again and again with the same grid), inline before and when
 * the tuple is one of a kind (a fresh pointer). Returns call_args.id, 0
 * for inline, or -errno. */
static int64_t writer_args_id(struct cw_writer *w, const struct cw_event_row *r)
{
	struct cw_argkey k = { .nargs = r->nargs > 4 ? 4 : r->nargs };
	sqlite3_stmt *s = w->st[ST_ARGS_PUT];
	uint64_t h;
	int64_t id;
	int i, got;

	if (k.nargs <= 0)
		return 0;
	for (i = 0; i < k.nargs; i++)
		k.a[i] = r->args[i];
	h = cw_argkey_hash(&k);
	got = cw_argcache_get(&w->args, &k, h, &id);
	if (got && id > 0)
		return id;
	if (!got)
		return cw_argcache_put(&w->args, &k, h, 0) ? -ENOMEM : 0;
	WLOCK(w);
	if ((id = writer_begin(w)))
		return id;
	for (i = 0; i < k.nargs; i++)
		sqlite3_bind_int64(s, 1 + i, k.a[i]);
	id = step_id(w, s, 1);
	if (id > 0 && cw_argcache_put(&w->args, &k, h, id))
		return -ENOMEM;
	return id;
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
