#include "store/writer.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/hist.h"
#include "store/callq.h"
#include "store/keycache.h"
#include "store/retention.h"
#include "util/strbuf.h"
#include "util/u64map.h"

#define DEFAULT_BATCH_ROWS 50000
/* Calls between the caller's thread and the writer thread: 16384 rows of
 * 136 bytes, 2.2 MB; a quarter second of SQLite's rate here. */
#define DEFAULT_QUEUE_ROWS 16384
/* An event is anomalous when slower than this multiple of its op's running
 * median, once the op has enough samples for the median to mean something. */
#define ANOMALY_FACTOR 3
#define ANOMALY_MIN_SAMPLES 32
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
	ST_NCCL_CALL,
	ST_NCCL_COMM,
	ST_KEVENT,
	ST_TKEY_PUT,
	ST_OP_PUT,
	ST_OP_GET,
	ST_STR_GET,
	ST_STR_PUT,
	ST_ARGS_PUT,
	ST_MAX
};

static const char *const stmt_sql[ST_MAX] = {
	/* Kernel-side events keep the whole row (schema v7). */
	[ST_KEVENT] = "INSERT INTO kevents (id, node, seq, session_id, wall_ns, mono_ns, pid, tid, cgroup_id, comm,"
		      " source, op, duration_ns, arg0, arg1, arg2, arg3, bytes, detail, ret, device, stack_id,"
		      " py_stack_id, anomalous) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,"
		      "?18,?19,?20,?21,?22,?23,?24)",
	[ST_TKEY_PUT] = "INSERT INTO call_threads (node, session_id, pid, tid, cgroup_id, comm, device, mono_base,"
			" wall_off) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)",
	[ST_OP_PUT] = "INSERT OR IGNORE INTO call_ops (source, op) VALUES (?1,?2)",
	[ST_OP_GET] = "SELECT id FROM call_ops WHERE source = ?1 AND op = ?2",
	[ST_STR_GET] = "SELECT id FROM strings WHERE text = ?1",
	[ST_STR_PUT] = "INSERT INTO strings (text) VALUES (?1)",
	[ST_ARGS_PUT] = "INSERT INTO call_args (a0, a1, a2, a3) VALUES (?1,?2,?3,?4)",
	/* ST_EVENT and ST_EVENT_MULTI are built at run time: event_sql(). */
	[ST_OFFCPU] = "INSERT INTO offcpu (node, session_id, pid, tid, comm, start_mono_ns, end_mono_ns, wall_ns,"
		      " duration_ns, reason, cpu, by_pid, by_tid, by_comm, by_cgroup_id, waker_pid, waker_comm)"
		      " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17)",
	[ST_SNAPSHOT] = "INSERT INTO snapshots (node, session_id, mono_ns, wall_ns, cpu_pct, mem_pct,"
			" swap_used_bytes, load1, ncpu, page_alloc_per_s, io_bytes_per_s, io_busy_pct)"
			" VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)",
	[ST_PROCESS] = "INSERT INTO processes (node, pid, ppid, comm, cmdline, cgroup_id, rank, local_rank,"
		       " world_size, start_wall_ns, exit_code) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)"
		       " ON CONFLICT (node, pid) DO UPDATE SET"
		       " ppid = coalesce(excluded.ppid, ppid), comm = coalesce(excluded.comm, comm),"
		       " cmdline = coalesce(excluded.cmdline, cmdline), cgroup_id = coalesce(excluded.cgroup_id, cgroup_id),"
		       " rank = coalesce(excluded.rank, rank), local_rank = coalesce(excluded.local_rank, local_rank),"
		       " world_size = coalesce(excluded.world_size, world_size),"
		       " start_wall_ns = coalesce(start_wall_ns, excluded.start_wall_ns),"
		       " exit_code = coalesce(excluded.exit_code, exit_code)",
	[ST_THREAD] = "INSERT OR REPLACE INTO threads (node, tid, pid, comm) VALUES (?1,?2,?3,?4)",
	/* A cgroup keeps the identity it was first resolved with (a short-lived
	 * container stays named after its directory is gone); later sightings
	 * fill only what was unknown and move last_seen. */
	[ST_CGROUP] = "INSERT INTO cgroups (node, cgroup_id, path, container, runtime, container_id, pod, pod_uid,"
		      " namespace, qos, slurm_job, slurm_step, unit, tenant, first_seen_wall_ns, last_seen_wall_ns)"
		      " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?15)"
		      " ON CONFLICT (node, cgroup_id) DO UPDATE SET path = coalesce(path, excluded.path),"
		      " container = coalesce(container, excluded.container), runtime = coalesce(runtime, excluded.runtime),"
		      " container_id = coalesce(container_id, excluded.container_id), pod = coalesce(pod, excluded.pod),"
		      " pod_uid = coalesce(pod_uid, excluded.pod_uid), namespace = coalesce(namespace, excluded.namespace),"
		      " qos = coalesce(qos, excluded.qos), slurm_job = coalesce(slurm_job, excluded.slurm_job),"
		      " slurm_step = coalesce(slurm_step, excluded.slurm_step), unit = coalesce(unit, excluded.unit),"
		      " tenant = coalesce(tenant, excluded.tenant),"
		      " first_seen_wall_ns = coalesce(first_seen_wall_ns, excluded.first_seen_wall_ns),"
		      " last_seen_wall_ns = max(coalesce(last_seen_wall_ns, 0), coalesce(excluded.last_seen_wall_ns, 0))",
	[ST_CGROUP_SEEN] = "UPDATE cgroups SET last_seen_wall_ns = max(coalesce(last_seen_wall_ns, 0), ?3)"
			   " WHERE node = ?1 AND cgroup_id = ?2",
	[ST_PRESSURE] = "INSERT INTO cgroup_pressure (node, session_id, cgroup_id, wall_ns, mono_ns, cpu_some_us,"
			" cpu_full_us, memory_some_us, memory_full_us, io_some_us, io_full_us, cpu_some_avg10,"
			" memory_some_avg10, io_some_avg10, nr_periods, nr_throttled, throttled_usec, quota_us, period_us)"
			" VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19)",
	[ST_KERNEL_NAME] = "INSERT OR REPLACE INTO kernel_names (node, pid, handle, name) VALUES (?1,?2,?3,?4)",
	[ST_STACK_GET] = "SELECT id FROM stacks WHERE hash = ?1",
	[ST_STACK_PUT] = "INSERT INTO stacks (hash, depth, frames) VALUES (?1,?2,?3)",
	[ST_PYSTACK_GET] = "SELECT id FROM py_stacks WHERE hash = ?1",
	[ST_PYSTACK_PUT] = "INSERT INTO py_stacks (hash, depth, frames, user_file, user_line, user_function)"
			   " VALUES (?1,?2,?3,?4,?5,?6)",
	[ST_COUNTER] = "INSERT OR REPLACE INTO counters (node, session_id, name, value) VALUES (?1,?2,?3,?4)",
	[ST_AGG_GET] = "SELECT count, sum_ns, max_ns, hist FROM aggregates"
		       " WHERE node = ?1 AND source = ?2 AND op = ?3 AND second = ?4",
	[ST_AGG_PUT] = "INSERT OR REPLACE INTO aggregates (node, source, op, second, count, sum_ns, max_ns, hist)"
		       " VALUES (?1,?2,?3,?4,?5,?6,?7,?8)",
	[ST_NCCL_CALL] = "INSERT INTO nccl_calls (node, session_id, pid, tid, comm, comm_id, rank, nranks, seq, op,"
			 " count, datatype, bytes, redop, peer, stream, wall_ns, mono_ns, duration_ns, ret, done_wall_ns, wait_ns)"
			 " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22)",
	[ST_NCCL_COMM] = "INSERT INTO nccl_comms (node, pid, comm, comm_id, nranks, rank, parent_id, op,"
			 " created_wall_ns, destroyed_wall_ns, async_error) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)"
			 " ON CONFLICT (node, pid, comm) DO UPDATE SET"
			 " comm_id = coalesce(excluded.comm_id, comm_id), nranks = coalesce(excluded.nranks, nranks),"
			 " rank = coalesce(excluded.rank, rank), parent_id = coalesce(excluded.parent_id, parent_id),"
			 " op = coalesce(excluded.op, op), created_wall_ns = coalesce(excluded.created_wall_ns, created_wall_ns),"
			 " destroyed_wall_ns = coalesce(excluded.destroyed_wall_ns, destroyed_wall_ns),"
			 " async_error = coalesce(excluded.async_error, async_error)",
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
	int64_t second;
	struct cw_hist h;
};

struct counter {
	char *name;
	uint64_t value;
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
	sqlite3_stmt *st[ST_MAX];
	int in_tx;
	int immediate;      /* BEGIN IMMEDIATE: take the write lock up front */
	int rows_in_batch;
	/* Rows stored in the open transaction: lost with it when it rolls
	 * back (a failed COMMIT, or SQLite's own rollback on a full disk). */
	uint64_t tx_rows, tx_events, tx_offcpu, tx_snapshots;
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
static struct cw_writer *wlock(struct cw_writer *w)
{
	if (w->threaded) {
		pthread_mutex_lock(&w->mu);
		w->api_depth++;
	}
	return w;
}

static void wunlock(struct cw_writer **wp)
{
	struct cw_writer *w = *wp;

	if (w->threaded) {
		w->api_depth--;
		pthread_mutex_unlock(&w->mu);
	}
}

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

#define WLOCK(w) struct cw_writer *wlocked_ __attribute__((cleanup(wunlock), unused)) = wlock(w)

static void bind_text_or_null(sqlite3_stmt *s, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, i);
}

static int step_reset(sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);

	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : cw_sqlite_db_errno(sqlite3_db_handle(s), rc);
}

int cw_session_begin(struct cw_store *st, const struct cw_session_info *in, int64_t *id)
{
	sqlite3_stmt *s;
	int rc, i = 1;

	rc = sqlite3_prepare_v2(st->db,
				"INSERT INTO sessions (node, kind, started_wall_ns, mono_to_wall_ns, host, kernel, gpu,"
				" driver, cuda, python, command, rank, local_rank, world_size)"
				" VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
				-1, &s, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_db_errno(st->db, rc);
	bind_text_or_null(s, i++, in->node);
	bind_text_or_null(s, i++, in->kind);
	sqlite3_bind_int64(s, i++, (int64_t)in->started_wall_ns);
	sqlite3_bind_int64(s, i++, in->mono_to_wall_ns);
	bind_text_or_null(s, i++, in->host);
	bind_text_or_null(s, i++, in->kernel);
	bind_text_or_null(s, i++, in->gpu);
	bind_text_or_null(s, i++, in->driver);
	bind_text_or_null(s, i++, in->cuda);
	bind_text_or_null(s, i++, in->python);
	bind_text_or_null(s, i++, in->command);
	if (in->rank >= 0)
		sqlite3_bind_int(s, i, in->rank);
	i++;
	if (in->local_rank >= 0)
		sqlite3_bind_int(s, i, in->local_rank);
	i++;
	if (in->world_size > 0)
		sqlite3_bind_int(s, i, in->world_size);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return cw_sqlite_db_errno(st->db, rc);
	*id = sqlite3_last_insert_rowid(st->db);
	return 0;
}

int cw_session_end(struct cw_store *st, int64_t id, uint64_t ended_wall_ns, int64_t mono_to_wall_ns)
{
	sqlite3_stmt *s;
	int rc;

	rc = sqlite3_prepare_v2(st->db, "UPDATE sessions SET ended_wall_ns = ?, mono_to_wall_ns = ? WHERE id = ?",
				-1, &s, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_db_errno(st->db, rc);
	sqlite3_bind_int64(s, 1, (int64_t)ended_wall_ns);
	sqlite3_bind_int64(s, 2, mono_to_wall_ns);
	sqlite3_bind_int64(s, 3, id);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_db_errno(st->db, rc);
}

/* The next id (over both event tables) and this node's next sequence
 * number: a node's sequence grows with the id, so its newest row holds the
 * largest; found by walking back from the newest row, not by a scan. */
static int load_next_seq(struct cw_writer *w)
{
	static const char *const sql[] = {
		"SELECT coalesce(max(id), 0) FROM calls",
		"SELECT coalesce(max(id), 0) FROM kevents",
		"SELECT coalesce(c.sq, c.id) FROM calls c JOIN call_threads t ON t.id = c.th WHERE t.node = ?1"
		" ORDER BY c.id DESC LIMIT 1",
		"SELECT seq FROM kevents WHERE node = ?1 ORDER BY id DESC LIMIT 1",
	};
	int64_t v[4] = { 0, 0, 0, 0 };
	sqlite3_stmt *s;
	int rc = SQLITE_OK;

	for (int i = 0; i < 4 && rc == SQLITE_OK; i++) {
		rc = sqlite3_prepare_v2(w->db, sql[i], -1, &s, NULL);
		if (rc != SQLITE_OK)
			break;
		if (i >= 2)
			sqlite3_bind_text(s, 1, w->node, -1, SQLITE_STATIC);
		rc = sqlite3_step(s);
		if (rc == SQLITE_ROW)
			v[i] = sqlite3_column_int64(s, 0);
		sqlite3_finalize(s);
		rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
	}
	if (rc != SQLITE_OK)
		return cw_sqlite_db_errno(w->db, rc);
	w->next_id = (v[0] > v[1] ? v[0] : v[1]) + 1;
	w->next_seq = (v[2] > v[3] ? v[2] : v[3]) + 1;
	return 0;
}

/* INSERT INTO calls ... VALUES (row 1), ..., (row n). Row k's parameters
 * are numbered from 1 + k * EVENT_ROW_PARAMS, in column order. */
static int event_sql(struct strbuf *sb, int rows)
{
	int k, j, b, err;

	err = strbuf_adds(sb, "INSERT INTO calls (id, th, op, t, dur, a0, a1, a2, a3, bytes, s, ret, stack, pystack,"
			  " anomalous, sq, ar) VALUES ");
	for (k = 0; k < rows && !err; k++) {
		b = 1 + k * EVENT_ROW_PARAMS;
		err = strbuf_addf(sb, "%s(?%d", k ? "," : "", b);
		for (j = 1; j < EVENT_ROW_PARAMS && !err; j++)
			err = strbuf_addf(sb, ",?%d", b + j);
		if (!err)
			err = strbuf_addch(sb, ')');
	}
	return err;
}

static int prepare(struct cw_writer *w, enum stmt_id id)
{
	struct strbuf sb = STRBUF_INIT;
	const char *sql = stmt_sql[id];
	int rc, err = 0;

	if (id == ST_EVENT || id == ST_EVENT_MULTI) {
		err = event_sql(&sb, id == ST_EVENT ? 1 : EVENTS_PER_STMT);
		sql = strbuf_str(&sb);
	}
	if (!err) {
		rc = sqlite3_prepare_v3(w->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &w->st[id], NULL);
		err = cw_sqlite_db_errno(w->db, rc);
		if (rc != SQLITE_OK && !err)
			err = -EIO;
	}
	strbuf_release(&sb);
	return err;
}

static void *writer_main(void *arg);

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
	for (i = 0; i < ST_MAX; i++) {
		err = prepare(w, (enum stmt_id)i);
		if (err)
			goto fail;
	}
	err = load_next_seq(w);
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
static void lose_tx(struct cw_writer *w)
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
	w->stats.failed_rows += w->tx_rows;
	w->stats.events -= w->tx_events;
	w->stats.offcpu -= w->tx_offcpu;
	w->stats.snapshots -= w->tx_snapshots;
	w->tx_rows = w->tx_events = w->tx_offcpu = w->tx_snapshots = 0;
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
static void note_error(struct cw_writer *w, int err)
{
	w->stats.last_error = err;
	w->stats.failing = 1;
	if (w->in_tx && sqlite3_get_autocommit(w->db))
		lose_tx(w);
}

static int begin_if_needed(struct cw_writer *w)
{
	int err;

	if (w->in_tx)
		return 0;
	err = cw_exec(w->db, w->immediate ? "BEGIN IMMEDIATE" : "BEGIN");
	if (err) {
		/* A lock held by another writer is no failure of ours. */
		if (err != -EBUSY)
			note_error(w, err);
		return err;
	}
	w->in_tx = 1;
	w->tx_rows = w->tx_events = w->tx_offcpu = w->tx_snapshots = 0;
	return 0;
}

int cw_writer_try_begin(struct cw_writer *w)
{
	WLOCK(w);
	return begin_if_needed(w);
}

int cw_writer_in_tx(const struct cw_writer *w)
{
	return w->in_tx;
}

int cw_writer_session_begin(struct cw_writer *w, const struct cw_session_info *info)
{
	WLOCK(w);
	int64_t id = 0;
	int err;

	if (w->session_id)
		return 0;
	err = begin_if_needed(w);
	if (err)
		return err;
	err = cw_session_begin(w->store, info, &id);
	if (err) {
		note_error(w, err);
		/* Nothing else is in this batch yet: end it, lock released. */
		if (w->in_tx && !sqlite3_get_autocommit(w->db))
			cw_exec(w->db, "ROLLBACK");
		lose_tx(w);
		return err;
	}
	cw_writer_set_session(w, id);
	w->session_in_tx = 1;
	return 0;
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

static int commit(struct cw_writer *w)
{
	int err;

	if (!w->in_tx)
		return 0;
	err = cw_exec(w->db, "COMMIT");
	if (err) {
		if (!sqlite3_get_autocommit(w->db))
			cw_exec(w->db, "ROLLBACK");
		/* The batch's rows are gone with it. */
		lose_tx(w);
		w->stats.last_error = err;
		w->stats.failing = 1;
		return err;
	}
	w->in_tx = 0;
	w->rows_in_batch = 0;
	w->tx_rows = w->tx_events = w->tx_offcpu = w->tx_snapshots = 0;
	w->session_in_tx = 0;
	w->stats.batches++;
	w->stats.failing = 0;
	return 0;
}

/* Counts a row toward the batch: commits when the batch is full.
 * Aggregates are written with the batch so they never run ahead of the
 * events. */
static int batch_tick(struct cw_writer *w)
{
	if (++w->rows_in_batch < w->batch_rows)
		return 0;
	/* A flush waits for the writer thread, which needs mu: not while a
	 * public function holds it. */
	if (w->threaded && w->api_depth) {
		w->flush_due = 1;
		return 0;
	}
	return cw_writer_flush(w);
}

/* The caller's thread catches up with transactions lost since its last
 * call (lose_tx in threaded mode). */
static void sync_gen(struct cw_writer *w)
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

/* Called after every row but events (which count themselves when
 * stored, in insert_events). */
static int row_done(struct cw_writer *w, int err)
{
	if (err) {
		w->stats.failed_rows++;
		note_error(w, err);
		return err;
	}
	w->tx_rows++;
	return batch_tick(w);
}

static int op_index(struct cw_writer *w, const char *source, const char *op)
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

static int agg_add(struct cw_writer *w, int opi, int64_t second, uint64_t dur)
{
	uint64_t key = ((uint64_t)second << 10) ^ (uint64_t)(opi + 1);
	int64_t idx;
	struct agg *a;

	if (!u64map_get(&w->agg_index, key, &idx)) {
		if (w->naggs == w->aggs_alloc) {
			size_t n = w->aggs_alloc ? w->aggs_alloc * 2 : 64;
			struct agg *p = realloc(w->aggs, n * sizeof(*p));

			if (!p)
				return -ENOMEM;
			w->aggs = p;
			w->aggs_alloc = n;
		}
		idx = (int64_t)w->naggs++;
		a = &w->aggs[idx];
		a->op_index = opi;
		a->second = second;
		cw_hist_reset(&a->h);
		if (u64map_put(&w->agg_index, key, idx))
			return -ENOMEM;
	}
	cw_hist_add(&w->aggs[idx].h, dur);
	return 0;
}

static int is_anomalous(struct op_state *s, uint64_t dur)
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
static int insert_events(struct cw_writer *w, sqlite3_stmt *s, struct bound_row *br, struct pending_event *pe,
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
		note_error(w, err);
		return err;
	}
	w->stats.events += (uint64_t)n;
	w->tx_events += (uint64_t)n;
	w->tx_rows += (uint64_t)n;
	return 0;
}

/* Writes every pending event: a full statement's worth with the multi-row
 * statement, a remainder (at a flush) one row at a time. */
static int drain_events(struct cw_writer *w)
{
	int i, n = w->npend, err = 0;

	/* Taken off the queue first: a failure below rolls back the thread
	 * and string rows the rest would name (lose_tx), so they are counted
	 * as failed here and never inserted. */
	w->npend = 0;
	if (n == EVENTS_PER_STMT)
		return insert_events(w, w->st[ST_EVENT_MULTI], w->bound_multi, w->pend, n);
	for (i = 0; i < n && !err; i++)
		err = insert_events(w, w->st[ST_EVENT], &w->bound_one, &w->pend[i], 1);
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
static int64_t thread_id(struct cw_writer *w, const struct cw_event_row *r)
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
	if ((id = begin_if_needed(w)))
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

static int64_t op_id(struct cw_writer *w, struct op_state *o)
{
	sqlite3_stmt *s;
	int64_t id;

	if (o->db_id)
		return o->db_id;
	WLOCK(w);
	if ((id = begin_if_needed(w)))
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
static int64_t string_id(struct cw_writer *w, const char *text)
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
	if ((id = begin_if_needed(w)))
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
static int64_t args_id(struct cw_writer *w, const struct cw_event_row *r)
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
	if ((id = begin_if_needed(w)))
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
static int queue_call(struct cw_writer *w, const struct cw_event_row *r, int opi, int anomalous, int64_t id,
		      int64_t seq)
{
	struct pending_event *pe = &w->pend[w->npend];
	int64_t th, op, str = 0, ar;

	th = thread_id(w, r);
	if (th < 0)
		return (int)th;
	ar = args_id(w, r);
	if (ar < 0)
		return (int)ar;
	op = op_id(w, &w->ops[opi]);
	if (op < 0)
		return (int)op;
	if (r->detail && (str = string_id(w, r->detail)) < 0)
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
static int insert_kevent(struct cw_writer *w, const struct cw_event_row *r, int opi, int anomalous, int64_t id,
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

static int event_threaded(struct cw_writer *w, const struct cw_event_row *r);

int cw_writer_event(struct cw_writer *w, const struct cw_event_row *r)
{
	int err, opi, anomalous = 0;
	int64_t id, seq;

	if (w->threaded)
		return event_threaded(w, r);
	err = begin_if_needed(w);
	if (err)
		return row_done(w, err);
	opi = op_index(w, r->source, r->op);
	if (opi < 0)
		return row_done(w, opi);
	/* Instant events (exec, retransmit) have no latency to judge. */
	if (r->duration_ns || r->has_ret)
		anomalous = is_anomalous(&w->ops[opi], r->duration_ns);
	err = agg_add(w, opi, wall_second(r), r->duration_ns);
	if (err)
		return row_done(w, err);
	id = w->next_id++;
	seq = w->next_seq++;
	if (!w->ops[opi].is_call) {
		err = insert_kevent(w, r, opi, anomalous, id, seq);
		if (!err) {
			w->stats.events++;
			w->tx_events++;
		}
		return row_done(w, err);
	}
	err = queue_call(w, r, opi, anomalous, id, seq);
	if (err)
		return row_done(w, err);
	if (w->npend == EVENTS_PER_STMT) {
		/* drain_events() counts the rows it stores or fails. */
		err = drain_events(w);
		if (err)
			return err;
	}
	return batch_tick(w);
}

/* Threaded mode: everything but the insert of a call happens here, on the
 * caller's thread; the call's row goes to the writer thread through q. */
static int event_threaded(struct cw_writer *w, const struct cw_event_row *r)
{
	int err, opi, anomalous = 0;
	int64_t id, seq;

	sync_gen(w);
	opi = op_index(w, r->source, r->op);
	if (opi < 0) {
		WLOCK(w);
		return row_done(w, opi);
	}
	if (r->duration_ns || r->has_ret)
		anomalous = is_anomalous(&w->ops[opi], r->duration_ns);
	err = agg_add(w, opi, wall_second(r), r->duration_ns);
	id = w->next_id++;
	seq = w->next_seq++;
	if (!err && !w->ops[opi].is_call) {
		WLOCK(w);
		err = begin_if_needed(w);
		if (!err)
			err = insert_kevent(w, r, opi, anomalous, id, seq);
		if (!err) {
			w->stats.events++;
			w->tx_events++;
		}
		return row_done(w, err);
	}
	if (!err)
		err = queue_call(w, r, opi, anomalous, id, seq);
	if (err) {
		WLOCK(w);
		return row_done(w, err);
	}
	if (++w->rows_in_batch >= w->batch_rows || w->flush_due)
		return cw_writer_flush(w);
	return 0;
}

/* The writer thread: inserts queued calls, a full statement at a time
 * (fewer only when a flush drains the queue). */
static void *writer_main(void *arg)
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
		err = k ? begin_if_needed(w) : 0;
		if (err) {
			w->stats.failed_rows += k;
		} else if (k == EVENTS_PER_STMT) {
			err = insert_events(w, w->st[ST_EVENT_MULTI], w->bound_multi, w->wpend, (int)k);
		} else {
			for (i = 0; i < k && !err; i++)
				err = insert_events(w, w->st[ST_EVENT], &w->bound_one, &w->wpend[i], 1);
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

int cw_writer_offcpu(struct cw_writer *w, const struct cw_offcpu_row *r)
{
	WLOCK(w);
	sqlite3_stmt *s = w->st[ST_OFFCPU];
	int err = begin_if_needed(w);

	if (err)
		return row_done(w, err);
	sqlite3_bind_text(s, 1, w->node, -1, SQLITE_STATIC);
	if (w->session_id)
		sqlite3_bind_int64(s, 2, w->session_id);
	sqlite3_bind_int64(s, 3, r->pid);
	sqlite3_bind_int64(s, 4, r->tid);
	bind_text_or_null(s, 5, r->comm);
	sqlite3_bind_int64(s, 6, (int64_t)r->start_mono_ns);
	sqlite3_bind_int64(s, 7, (int64_t)r->end_mono_ns);
	sqlite3_bind_int64(s, 8, (int64_t)r->wall_ns);
	sqlite3_bind_int64(s, 9, (int64_t)(r->end_mono_ns - r->start_mono_ns));
	bind_text_or_null(s, 10, r->reason);
	if (r->cpu >= 0)
		sqlite3_bind_int(s, 11, r->cpu);
	if (r->by_pid || r->by_comm) {
		sqlite3_bind_int64(s, 12, r->by_pid);
		sqlite3_bind_int64(s, 13, r->by_tid);
	}
	bind_text_or_null(s, 14, r->by_comm);
	if (r->by_cgroup_id)
		sqlite3_bind_int64(s, 15, (int64_t)r->by_cgroup_id);
	if (r->waker_pid)
		sqlite3_bind_int64(s, 16, r->waker_pid);
	bind_text_or_null(s, 17, r->waker_comm);
	err = step_reset(s);
	if (!err) {
		w->stats.offcpu++;
		w->tx_offcpu++;
	}
	return row_done(w, err);
}

int cw_writer_snapshot(struct cw_writer *w, const struct cw_snapshot_row *r)
{
	WLOCK(w);
	sqlite3_stmt *s = w->st[ST_SNAPSHOT];
	int err = begin_if_needed(w);

	if (err)
		return row_done(w, err);
	sqlite3_bind_text(s, 1, w->node, -1, SQLITE_STATIC);
	if (w->session_id)
		sqlite3_bind_int64(s, 2, w->session_id);
	sqlite3_bind_int64(s, 3, (int64_t)r->mono_ns);
	sqlite3_bind_int64(s, 4, (int64_t)r->wall_ns);
	sqlite3_bind_double(s, 5, r->cpu_pct);
	sqlite3_bind_double(s, 6, r->mem_pct);
	sqlite3_bind_int64(s, 7, r->swap_used_bytes);
	sqlite3_bind_double(s, 8, r->load1);
	sqlite3_bind_int(s, 9, r->ncpu);
	sqlite3_bind_int64(s, 10, r->page_alloc_per_s);
	sqlite3_bind_int64(s, 11, r->io_bytes_per_s);
	sqlite3_bind_double(s, 12, r->io_busy_pct);
	err = step_reset(s);
	if (!err) {
		w->stats.snapshots++;
		w->tx_snapshots++;
	}
	return row_done(w, err);
}

int cw_writer_process(struct cw_writer *w, const struct cw_process_row *r)
{
	WLOCK(w);
	sqlite3_stmt *s = w->st[ST_PROCESS];
	int err = begin_if_needed(w);

	if (err)
		return row_done(w, err);
	sqlite3_bind_text(s, 1, w->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, r->pid);
	if (r->ppid)
		sqlite3_bind_int64(s, 3, r->ppid);
	bind_text_or_null(s, 4, r->comm);
	bind_text_or_null(s, 5, r->cmdline);
	if (r->cgroup_id)
		sqlite3_bind_int64(s, 6, (int64_t)r->cgroup_id);
	if (r->rank >= 0)
		sqlite3_bind_int(s, 7, r->rank);
	if (r->local_rank >= 0)
		sqlite3_bind_int(s, 8, r->local_rank);
	if (r->world_size > 0)
		sqlite3_bind_int(s, 9, r->world_size);
	if (r->start_wall_ns)
		sqlite3_bind_int64(s, 10, (int64_t)r->start_wall_ns);
	if (r->has_exit)
		sqlite3_bind_int(s, 11, r->exit_code);
	return row_done(w, step_reset(s));
}

static int put4(struct cw_writer *w, enum stmt_id id, int64_t a, int64_t b, const char *c, const char *d,
		int b_is_text)
{
	sqlite3_stmt *s = w->st[id];
	int err = begin_if_needed(w);

	if (err)
		return row_done(w, err);
	sqlite3_bind_text(s, 1, w->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, a);
	if (b_is_text)
		bind_text_or_null(s, 3, c);
	else
		sqlite3_bind_int64(s, 3, b);
	bind_text_or_null(s, 4, d);
	return row_done(w, step_reset(s));
}

int cw_writer_thread(struct cw_writer *w, uint32_t pid, uint32_t tid, const char *comm)
{
	WLOCK(w);
	return put4(w, ST_THREAD, tid, pid, NULL, comm, 0);
}

static const char *nz(const char *s)
{
	return s && s[0] ? s : NULL;
}

int cw_writer_cgroup_row(struct cw_writer *w, const struct cw_cgroup_row *r)
{
	WLOCK(w);
	sqlite3_stmt *s = w->st[ST_CGROUP];
	const struct cw_tenant *t = r->t;
	char key[CW_CGPATH_MAX + 16];
	int err = begin_if_needed(w);

	if (err)
		return row_done(w, err);
	sqlite3_bind_text(s, 1, w->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, (int64_t)r->cgroup_id);
	bind_text_or_null(s, 3, r->path);
	bind_text_or_null(s, 4, nz(r->container) ? r->container : nz(t->container_id));
	bind_text_or_null(s, 5, nz(t->runtime));
	bind_text_or_null(s, 6, nz(t->container_id));
	bind_text_or_null(s, 7, nz(t->pod));
	bind_text_or_null(s, 8, nz(t->pod_uid));
	bind_text_or_null(s, 9, nz(t->ns));
	bind_text_or_null(s, 10, nz(t->qos));
	bind_text_or_null(s, 11, nz(t->slurm_job));
	bind_text_or_null(s, 12, nz(t->slurm_step));
	bind_text_or_null(s, 13, nz(t->unit));
	cw_tenant_key(t, r->path, key, sizeof(key));
	bind_text_or_null(s, 14, key);
	if (r->seen_wall_ns)
		sqlite3_bind_int64(s, 15, (int64_t)r->seen_wall_ns);
	return row_done(w, step_reset(s));
}

int cw_writer_cgroup_seen(struct cw_writer *w, uint64_t cgroup_id, uint64_t wall_ns)
{
	WLOCK(w);
	sqlite3_stmt *s = w->st[ST_CGROUP_SEEN];
	int err = begin_if_needed(w);

	if (err)
		return row_done(w, err);
	sqlite3_bind_text(s, 1, w->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, (int64_t)cgroup_id);
	sqlite3_bind_int64(s, 3, (int64_t)wall_ns);
	return row_done(w, step_reset(s));
}

int cw_writer_cgroup_pressure(struct cw_writer *w, const struct cw_pressure_row *r)
{
	WLOCK(w);
	sqlite3_stmt *s = w->st[ST_PRESSURE];
	int err = begin_if_needed(w), i;

	if (err)
		return row_done(w, err);
	sqlite3_bind_text(s, 1, w->node, -1, SQLITE_STATIC);
	if (w->session_id)
		sqlite3_bind_int64(s, 2, w->session_id);
	sqlite3_bind_int64(s, 3, (int64_t)r->cgroup_id);
	sqlite3_bind_int64(s, 4, (int64_t)r->wall_ns);
	sqlite3_bind_int64(s, 5, (int64_t)r->mono_ns);
	/* -1 marks a value the kernel did not offer: NULL. */
	for (i = 0; i < 6; i++)
		if (r->psi_total_us[i] >= 0)
			sqlite3_bind_int64(s, 6 + i, r->psi_total_us[i]);
	for (i = 0; i < 3; i++)
		if (r->psi_avg10[i] >= 0)
			sqlite3_bind_double(s, 12 + i, r->psi_avg10[i]);
	if (r->nr_periods >= 0)
		sqlite3_bind_int64(s, 15, r->nr_periods);
	if (r->nr_throttled >= 0)
		sqlite3_bind_int64(s, 16, r->nr_throttled);
	if (r->throttled_usec >= 0)
		sqlite3_bind_int64(s, 17, r->throttled_usec);
	if (r->quota_us >= 0)
		sqlite3_bind_int64(s, 18, r->quota_us);
	if (r->period_us >= 0)
		sqlite3_bind_int64(s, 19, r->period_us);
	return row_done(w, step_reset(s));
}

int cw_writer_cgroup(struct cw_writer *w, uint64_t cgroup_id, const char *path, const char *container)
{
	WLOCK(w);
	struct cw_cgroup_row r = { .cgroup_id = cgroup_id, .path = path, .container = container };
	struct cw_tenant t;

	if (!path || cw_tenant_parse(path, &t))
		memset(&t, 0, sizeof(t));
	r.t = &t;
	return cw_writer_cgroup_row(w, &r);
}

int cw_writer_kernel_name(struct cw_writer *w, uint32_t pid, uint64_t handle, const char *name)
{
	WLOCK(w);
	sqlite3_stmt *s = w->st[ST_KERNEL_NAME];
	int err = begin_if_needed(w);

	if (err)
		return row_done(w, err);
	sqlite3_bind_text(s, 1, w->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, pid);
	sqlite3_bind_int64(s, 3, (int64_t)handle);
	bind_text_or_null(s, 4, name);
	return row_done(w, step_reset(s));
}

static void bind_opt(sqlite3_stmt *s, int i, int64_t v)
{
	if (v == CW_NCCL_NONE)
		sqlite3_bind_null(s, i);
	else
		sqlite3_bind_int64(s, i, v);
}

int cw_writer_nccl_call(struct cw_writer *w, const struct cw_nccl_call_row *r)
{
	WLOCK(w);
	sqlite3_stmt *s = w->st[ST_NCCL_CALL];
	int err = begin_if_needed(w), i = 1;

	if (err)
		return row_done(w, err);
	sqlite3_bind_text(s, i++, w->node, -1, SQLITE_STATIC);
	bind_opt(s, i++, w->session_id ? w->session_id : CW_NCCL_NONE);
	sqlite3_bind_int64(s, i++, r->pid);
	sqlite3_bind_int64(s, i++, r->tid);
	bind_opt(s, i++, r->comm);
	bind_opt(s, i++, r->comm_id);
	bind_opt(s, i++, r->rank);
	bind_opt(s, i++, r->nranks);
	sqlite3_bind_int64(s, i++, r->seq);
	bind_text_or_null(s, i++, r->op);
	bind_opt(s, i++, r->count);
	bind_opt(s, i++, r->datatype);
	bind_opt(s, i++, r->bytes);
	bind_opt(s, i++, r->redop);
	bind_opt(s, i++, r->peer);
	bind_opt(s, i++, r->stream);
	sqlite3_bind_int64(s, i++, (int64_t)r->wall_ns);
	sqlite3_bind_int64(s, i++, (int64_t)r->mono_ns);
	sqlite3_bind_int64(s, i++, (int64_t)r->duration_ns);
	bind_opt(s, i++, r->ret);
	bind_opt(s, i++, r->done_wall_ns);
	bind_opt(s, i++, r->wait_ns);
	return row_done(w, step_reset(s));
}

int cw_writer_nccl_comm(struct cw_writer *w, const struct cw_nccl_comm_row *r)
{
	WLOCK(w);
	sqlite3_stmt *s = w->st[ST_NCCL_COMM];
	int err = begin_if_needed(w), i = 1;

	if (err)
		return row_done(w, err);
	sqlite3_bind_text(s, i++, w->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, i++, r->pid);
	sqlite3_bind_int64(s, i++, r->comm);
	bind_opt(s, i++, r->comm_id);
	bind_opt(s, i++, r->nranks);
	bind_opt(s, i++, r->rank);
	bind_opt(s, i++, r->parent_id);
	bind_text_or_null(s, i++, r->op);
	bind_opt(s, i++, r->created_wall_ns);
	bind_opt(s, i++, r->destroyed_wall_ns);
	bind_opt(s, i++, r->async_error);
	return row_done(w, step_reset(s));
}

/* Stack hashes are stored as signed 64-bit integers; a zero hash would be
 * the empty-slot key of the cache, so it is nudged. */
static uint64_t cache_key(uint64_t hash)
{
	return hash ? hash : 1;
}

static int64_t intern(struct cw_writer *w, struct u64map *cache, enum stmt_id get, enum stmt_id put,
		      uint64_t hash, int depth, const char *frames, const char *uf, int ul, const char *ufn)
{
	sqlite3_stmt *s;
	int64_t id;
	int err, rc;

	if (u64map_get(cache, cache_key(hash), &id))
		return id;
	err = begin_if_needed(w);
	if (err)
		return err;
	s = w->st[get];
	sqlite3_bind_int64(s, 1, (int64_t)hash);
	rc = sqlite3_step(s);
	id = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
	sqlite3_reset(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		err = cw_sqlite_db_errno(w->db, rc);
		note_error(w, err);
		return err;
	}
	if (!id) {
		s = w->st[put];
		sqlite3_bind_int64(s, 1, (int64_t)hash);
		sqlite3_bind_int(s, 2, depth);
		bind_text_or_null(s, 3, frames);
		if (put == ST_PYSTACK_PUT) {
			bind_text_or_null(s, 4, uf);
			if (ul > 0)
				sqlite3_bind_int(s, 5, ul);
			bind_text_or_null(s, 6, ufn);
		}
		err = step_reset(s);
		if (err) {
			note_error(w, err);
			return err;
		}
		id = sqlite3_last_insert_rowid(w->db);
	}
	/* A full cache only costs a lookup next time. */
	u64map_put(cache, cache_key(hash), id);
	return id;
}

int64_t cw_writer_intern_stack(struct cw_writer *w, uint64_t hash, int depth, const char *frames)
{
	sync_gen(w);
	WLOCK(w);
	return intern(w, &w->stack_ids, ST_STACK_GET, ST_STACK_PUT, hash, depth, frames, NULL, 0, NULL);
}

int64_t cw_writer_intern_pystack(struct cw_writer *w, uint64_t hash, int depth, const char *frames_json,
				 const char *user_file, int user_line, const char *user_function)
{
	sync_gen(w);
	WLOCK(w);
	return intern(w, &w->pystack_ids, ST_PYSTACK_GET, ST_PYSTACK_PUT, hash, depth, frames_json, user_file,
		      user_line, user_function);
}

int cw_writer_pystack_cached(struct cw_writer *w, uint64_t hash, int64_t *id)
{
	sync_gen(w);
	return u64map_get(&w->pystack_ids, cache_key(hash), id);
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
	w->ncounters++;
	return &w->counters[i];
}

void cw_writer_counter_add(struct cw_writer *w, const char *name, uint64_t delta)
{
	struct counter *c = counter_slot(w, name);

	if (c)
		c->value += delta;
}

void cw_writer_counter_set(struct cw_writer *w, const char *name, uint64_t value)
{
	struct counter *c = counter_slot(w, name);

	if (c)
		c->value = value;
}

/* Merges one pending aggregate into its row (a second can span flushes). */
static int write_agg(struct cw_writer *w, const struct agg *a)
{
	struct op_state *o = &w->ops[a->op_index];
	sqlite3_stmt *g = w->st[ST_AGG_GET], *p = w->st[ST_AGG_PUT];
	uint8_t buf[CW_HIST_ENCODED_MAX];
	struct cw_hist h = a->h;
	int rc, n;

	sqlite3_bind_text(g, 1, w->node, -1, SQLITE_STATIC);
	sqlite3_bind_text(g, 2, o->source, -1, SQLITE_STATIC);
	sqlite3_bind_text(g, 3, o->op, -1, SQLITE_STATIC);
	sqlite3_bind_int64(g, 4, a->second);
	rc = sqlite3_step(g);
	if (rc == SQLITE_ROW)
		cw_hist_decode_merge(&h, sqlite3_column_blob(g, 3), (size_t)sqlite3_column_bytes(g, 3),
				     (uint64_t)sqlite3_column_int64(g, 0), (uint64_t)sqlite3_column_int64(g, 1),
				     (uint64_t)sqlite3_column_int64(g, 2));
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
	return step_reset(p);
}

static int write_pending(struct cw_writer *w)
{
	size_t i;
	int err = 0, e;

	for (i = 0; i < w->naggs; i++) {
		e = write_agg(w, &w->aggs[i]);
		if (e && !err)
			err = e;
	}
	w->naggs = 0;
	u64map_clear(&w->agg_index);
	if (w->session_id) {
		int c;

		for (c = 0; c < w->ncounters; c++) {
			sqlite3_stmt *s = w->st[ST_COUNTER];

			sqlite3_bind_text(s, 1, w->node, -1, SQLITE_STATIC);
			sqlite3_bind_int64(s, 2, w->session_id);
			sqlite3_bind_text(s, 3, w->counters[c].name, -1, SQLITE_STATIC);
			sqlite3_bind_int64(s, 4, (int64_t)w->counters[c].value);
			e = step_reset(s);
			if (e && !err)
				err = e;
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
		sync_gen(w);
	}
	WLOCK(w);
	w->flush_due = 0;
	err = begin_if_needed(w);
	if (err)
		return err;
	err = drain_events(w);
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
	e = write_pending(w);
	if (e) {
		note_error(w, e);
		if (!err)
			err = e;
	}
	e = commit(w);
	if (!err)
		err = e;
	if (!err && w->size_cap > 0 && cw_store_used_bytes(w->store) > w->size_cap) {
		int64_t pruned = 0;

		err = cw_retention_enforce(w->store, w->size_cap, &pruned);
		/* Retention drops thread rows of old stretches. */
		cw_keycache_clear(&w->threads);
		if (pruned > 0) {
			w->stats.pruned_events += (uint64_t)pruned;
			cw_writer_counter_set(w, "store.pruned_events", w->stats.pruned_events);
		}
	}
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

int cw_writer_free(struct cw_writer *w)
{
	int i, err = 0;

	if (!w)
		return 0;
	if (w->st[ST_EVENT])
		err = cw_writer_flush(w);
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
	cw_keycache_free(&w->threads);
	cw_strcache_free(&w->strings);
	cw_argcache_free(&w->args);
	free(w->ops);
	free(w->aggs);
	u64map_free(&w->agg_index);
	u64map_free(&w->stack_ids);
	u64map_free(&w->pystack_ids);
	free(w->node);
	free(w);
	return err;
}
