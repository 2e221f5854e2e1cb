/* Inside the writer (writer_*.c) only: its state and the functions its
 * files share. From the bottom up: writer_core.c: the transaction;
 * writer_stmt.c: the statements; writer_aggregates.c: op states,
 * anomalies, per-second aggregates and counters; writer_intern.c: stacks;
 * writer_events.c: events and the rows they name; writer_thread.c: the
 * writer thread; writer_tables.c: every other table; writer_batch.c: life
 * cycle, batches and flush. */
#ifndef CW_STORE_WRITER_CORE_H
#define CW_STORE_WRITER_CORE_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>

#include "store/callq.h"
#include "store/keycache.h"
#include "store/writer.h"
#include "util/hist.h"
#include "util/strbuf.h"
#include "util/u64map.h"

#define MAX_COUNTERS 128
#define MAX_OPS 512

enum stmt_id {
	ST_EVENT,
	ST_EVENT_MULTI,
	ST_OFFCPU,
	ST_SNAPSHOT,
	ST_PROCESS,
	ST_THREAD,
	ST_CGROUP,
	ST_CGROUP_SEEN,
	ST_PRESSURE,
	ST_KERNEL_NAME,
	ST_STACK_GET,
	ST_STACK_PUT,
	ST_PYSTACK_GET,
	ST_PYSTACK_PUT,
	ST_COUNTER,
	ST_AGG_GET,
	ST_AGG_PUT,
	ST_FOLD_GET,
	ST_FOLD_PUT,
	ST_NCCL_CALL,
	ST_NCCL_COMM,
	ST_KEVENT,
	ST_TKEY_PUT,
	ST_OP_PUT,
	ST_OP_GET,
	ST_STR_GET,
	ST_STR_PUT,
	ST_ARGS_PUT,
	ST_REQUEST,
	ST_REQ_TOTAL, /* built at run time: writer_requests.c */
	ST_REQ_SAVEPOINT,
	ST_REQ_RELEASE,
	ST_REQ_ROLLBACK,
	ST_ENGINE_METRIC,
	ST_MAX
};

/* Per-op running state: the median estimate that flags anomalies. */
struct op_state {
	char *source, *op; /* source is shared by the ops of one source */
	int source_len, op_len;
	int owns_source;
	int is_call;    /* stored in calls (else kevents) */
	int64_t db_id;  /* call_ops.id; 0 not yet known in this transaction */
	struct cw_hist all;
	uint64_t cached_p50;
	uint64_t since_refresh;
};

/* One (op, second) aggregate not yet written. */
struct agg {
	int op_index;
	uint32_t pid; /* folded: the process (the folded table); aggregates: 0 */
	int64_t second;
	struct cw_hist h;  /* the latencies of the calls that succeeded */
	uint64_t errors;   /* calls that failed (schema v8: aggregates.errors) */
};

struct counter {
	char *name;
	uint64_t value;
	/* Rows other code wrote into the open batch for this counter
	 * (cw_writer_counter_add_committed): moved to value when the batch
	 * commits, to counters[lost] when it rolls back. */
	uint64_t pending;
	int lost;
};

/* Events are inserted EVENTS_PER_STMT rows per statement: one multi-row
 * INSERT costs SQLite's statement start-up and tear-down (transaction
 * check, three cursor opens, the rowid seek to the end of the table, the
 * record buffer's allocation) once for all of them instead of once per row,
 * which is most of a single-row insert. Rows wait in w->pend until the
 * statement is full or the batch is flushed; their strings are copied into
 * w->strs because the caller's buffers are gone by then. */
#define EVENTS_PER_STMT 32
/* Parameters per row of the multi-row statement into calls, in column
 * order. Every one is an integer: the texts are interned (thread, op and
 * string rows) before a call is queued. */
enum event_param {
	EP_ID,
	EP_TH,
	EP_OP,
	EP_T,
	EP_DURATION,
	EP_ARG0,
	EP_BYTES = EP_ARG0 + 4,
	EP_DETAIL,
	EP_RET,
	EP_STACK,
	EP_PYSTACK,
	EP_ANOMALOUS,
	EP_SEQ,
	EP_ARGS, /* call_args.id when the arguments are interned */
	EVENT_ROW_PARAMS
};

/* An accepted call, flattened for binding. */
struct pending_event {
	int64_t v[EVENT_ROW_PARAMS];
	uint32_t nulls; /* bit p: parameter p is NULL */
	uint32_t gen;   /* the writer's loss generation when it was queued */
};

/* What one row of an event statement has bound. Bindings survive
 * sqlite3_reset(), and consecutive calls mostly repeat thread, op,
 * arguments and return code and their NULLs, so only the parameters that
 * changed are re-bound: binding is a third of the per-row cost otherwise. */
struct bound_row {
	int valid;
	int64_t v[EVENT_ROW_PARAMS];
	uint32_t nulls;
};

struct cw_writer {
	struct cw_store *store;
	sqlite3 *db;
	char *node;
	int64_t session_id;
	int batch_rows;
	int64_t size_cap;
	/* Under a cap: the database's share of it (footprint.h), and the
	 * rows one transaction may hold (its share, at the bytes a row took). */
	int64_t db_budget;
	int cap_tx_rows;
	sqlite3_stmt *st[ST_MAX];
	int in_tx;
	int immediate;      /* BEGIN IMMEDIATE: take the write lock up front */
	int rows_in_batch;
	/* Rows stored in the open transaction: lost with it when it rolls
	 * back (a failed COMMIT, or SQLite's own rollback on a full disk). */
	uint64_t tx_rows, tx_events, tx_offcpu, tx_snapshots;
	uint64_t tx_requests, tx_req_other, tx_engine;
	/* The node's routes in request_totals ("method\npath"), at most
	 * CW_REQ_MAX_ROUTES; loaded from the file at the first request and
	 * again after a lost transaction (writer_requests.c). */
	char **routes;
	int nroutes, routes_loaded;
	int session_in_tx; /* the session row is in the open transaction */
	int64_t next_seq;
	int64_t next_id; /* one id sequence over calls and kevents */
	struct cw_keycache threads; /* thread identity -> call_threads.id */
	struct cw_strcache strings; /* detail text -> strings.id */
	struct cw_argcache args;    /* argument tuple -> call_args.id, or seen once */
	struct op_state *ops;
	int nops;
	struct agg *aggs;
	size_t naggs, aggs_alloc;
	struct u64map agg_index;   /* (op index, second) -> aggs[] index */
	struct agg *folds;         /* per process: calls folded in the kernel (cw_writer_folded) */
	size_t nfolds, folds_alloc;
	struct u64map stack_ids;   /* hash -> stacks.id */
	struct u64map pystack_ids; /* hash -> py_stacks.id */
	struct counter counters[MAX_COUNTERS];
	int ncounters;
	struct pending_event pend[EVENTS_PER_STMT];
	int npend;
	struct bound_row bound_multi[EVENTS_PER_STMT]; /* ST_EVENT_MULTI's rows */
	struct bound_row bound_one;                     /* ST_EVENT's row */
	struct cw_writer_stats stats;
	/* Threaded mode (cw_writer_opts.threaded): calls go through q to the
	 * writer thread, which inserts them; mu serializes every use of the
	 * connection and of the statistics (recursive: public functions call
	 * each other). The caller's thread keeps the interning caches, the
	 * op states and aggregates to itself. A transaction lost on either
	 * thread bumps gen; calls queued under an older generation name rows
	 * that are gone and are counted as failed, and the caller's thread
	 * forgets its cached ids when it sees the bump. */
	int threaded;
	pthread_mutex_t mu;
	pthread_t thr;
	int thr_started;
	struct cw_callq q;
	struct pending_event wpend[EVENTS_PER_STMT]; /* the writer thread's statement */
	uint32_t gen, seen_gen;
	int async_err;   /* first insert error of the writer thread since the last flush */
	int api_depth;   /* the caller's thread holds mu through a public function */
	int flush_due;   /* a full batch seen while mu was held: flush at the next call */
};

/* Public functions hold mu for their whole body in threaded mode. */
static inline struct cw_writer *wlock(struct cw_writer *w)
{
	if (w->threaded) {
		pthread_mutex_lock(&w->mu);
		w->api_depth++;
	}
	return w;
}

static inline void wunlock(struct cw_writer **wp)
{
	struct cw_writer *w = *wp;

	if (w->threaded) {
		w->api_depth--;
		pthread_mutex_unlock(&w->mu);
	}
}

#define WLOCK(w) struct cw_writer *wlocked_ __attribute__((cleanup(wunlock), unused)) = wlock(w)

static inline void bind_text_or_null(sqlite3_stmt *s, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, i);
}

static inline int step_reset(sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);

	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : cw_sqlite_db_errno(sqlite3_db_handle(s), rc);
}

/* writer_core.c: the transaction. Opening one is checked for every row
 * (inline); the rest is not. */
int writer_begin_tx(struct cw_writer *w);
static inline int writer_begin(struct cw_writer *w)
{
	return w->in_tx ? 0 : writer_begin_tx(w);
}
void writer_note_error(struct cw_writer *w, int err);
void writer_lose_tx(struct cw_writer *w);
int writer_commit(struct cw_writer *w);
int writer_row_failed(struct cw_writer *w, int err);
void writer_sync_gen(struct cw_writer *w);
/* writer_aggregates.c: the open batch's pending counts, settled when it
 * ends (committed: 1, rolled back: 0). */
void writer_settle_counters(struct cw_writer *w, int committed);

/* writer_stmt.c */
int writer_prepare(struct cw_writer *w, enum stmt_id id);
int writer_load_next_seq(struct cw_writer *w);

/* writer_events.c */
int writer_insert_events(struct cw_writer *w, sqlite3_stmt *s, struct bound_row *br, struct pending_event *pe,
			 int n);
int writer_drain_events(struct cw_writer *w);
int writer_queue_call(struct cw_writer *w, const struct cw_event_row *r, int opi, int anomalous, int64_t id,
		      int64_t seq);
int writer_insert_kevent(struct cw_writer *w, const struct cw_event_row *r, int opi, int anomalous, int64_t id,
			 int64_t seq);

/* writer_aggregates.c */
int writer_op_index(struct cw_writer *w, const char *source, const char *op);
int writer_is_anomalous(struct op_state *s, uint64_t dur);
/* Adds r to its op's aggregate of its wall-clock second. */
/* 1 when r is a traced call that failed (its code is a failure of its
 * API, gpu/call_errors.h): kept out of the op's latency, counted apart. */
int writer_call_failed(const struct op_state *s, const struct cw_event_row *r);
int writer_aggregate(struct cw_writer *w, int opi, const struct cw_event_row *r);
int writer_write_pending(struct cw_writer *w);

/* writer_requests.c */
int writer_req_total_sql(struct strbuf *sb);
void writer_requests_free(struct cw_writer *w);

/* writer_thread.c */
void *writer_main(void *arg);

/* writer_batch.c: counts a row toward the batch (not events: they count
 * themselves when stored); commits a full one. */
int writer_row_done(struct cw_writer *w, int err);

/* Rows a transaction holds before it commits: the batch's, or under a
 * size cap fewer (a transaction's share of the cap, footprint.h). */
static inline int writer_batch_limit(const struct cw_writer *w)
{
	return w->size_cap > 0 && w->cap_tx_rows < w->batch_rows ? w->cap_tx_rows : w->batch_rows;
}

#endif
