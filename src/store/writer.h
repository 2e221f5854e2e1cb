/* The batched writer: the only code that inserts observations.
 *
 * Rows are inserted with prepared statements inside one open transaction
 * that is committed every batch_rows rows or when cw_writer_flush() is
 * called (trace calls it every 200 ms), so a SIGKILL loses at most the open
 * batch and never leaves a half-written one. Events are inserted 32 rows
 * per statement, so up to 31 wait in memory until the next statement or
 * flush (stats count them once stored). The writer also keeps the
 * per-second aggregates, flags anomalous events and enforces the size cap. */
#ifndef CW_STORE_WRITER_H
#define CW_STORE_WRITER_H

#include <stdint.h>

#include "store/store.h"
#include "util/hist.h"

struct cw_writer;

struct cw_session_info {
	const char *node;
	const char *kind;   /* "trace" or "demo:<scenario>" */
	uint64_t started_wall_ns;
	int64_t mono_to_wall_ns;
	const char *host, *kernel, *gpu, *driver, *cuda, *python, *command;
	int rank, local_rank, world_size; /* -1 unknown */
};

struct cw_writer_opts {
	const char *node;
	int64_t session_id;     /* 0: none yet (cw_writer_set_session) */
	int batch_rows;         /* rows per transaction; 0 = 50000 */
	int64_t size_cap_bytes; /* 0 = no cap */
	/* Take the write lock when a batch begins (BEGIN IMMEDIATE), so a
	 * lock held by another process shows in cw_writer_try_begin() before
	 * any row is handed over, never as a failed row. */
	int immediate;
	/* Insert calls on a writer thread of their own, fed by a bounded
	 * queue of queue_rows rows (0: 16384); a full queue makes the caller
	 * wait, counted as store.backpressure_waits / _ns. The caller's
	 * thread keeps decoding, interning and aggregating meanwhile. Every
	 * function may still be called from the caller's thread only. */
	int threaded;
	int queue_rows;
};

struct cw_event_row {
	uint64_t mono_ns;
	uint64_t wall_ns;
	uint64_t duration_ns;
	uint32_t pid, tid;
	uint64_t cgroup_id;
	const char *comm;
	const char *source; /* "cuda", "driver", "graph", "nccl", "io", "net", "mem", "proc", ... */
	const char *op;
	const char *detail; /* may be NULL */
	int nargs;          /* how many of args[] are meaningful */
	int64_t args[4];
	int has_bytes;
	int64_t bytes;
	int has_ret;
	int64_t ret;
	int32_t device;     /* -1 unknown */
	int64_t stack_id;   /* 0 none */
	int64_t py_stack_id;
};

struct cw_offcpu_row {
	uint32_t pid, tid;
	const char *comm;
	uint64_t start_mono_ns, end_mono_ns, wall_ns;
	const char *reason; /* "preempted" or "blocked" */
	int32_t cpu;
	uint32_t by_pid, by_tid;
	const char *by_comm;
	uint64_t by_cgroup_id;
	uint32_t waker_pid;
	const char *waker_comm;
};

/* One HTTP request a traced server answered (inference/http_conn.h), a
 * row of the requests table. */
struct cw_request_row {
	uint32_t pid, tid, resp_tid; /* resp_tid 0: no response */
	uint64_t cgroup_id;
	const char *comm;
	uint64_t conn_id;            /* the connection, unique within the session */
	uint32_t port;               /* the server's port, 0 unknown */
	uint64_t start_mono_ns, wall_ns; /* the request's first bytes were read */
	uint64_t duration_ns;        /* to the last response bytes */
	int64_t ttft_ns;             /* to the first response body bytes; -1 no body */
	const char *method, *path;   /* NULL unknown */
	int status;                  /* 0 none seen (stored NULL) */
	uint64_t bytes_in, bytes_out;
	int streamed;
	uint32_t body_events;
	int64_t itl_max_ns, itl_mean_ns; /* -1 fewer than two body events */
	const char *end;             /* "complete", "next", "closed", "idle", "flush" */
};

/* One sample of a metric an inference engine exposes on its own /metrics
 * (queue depth, running requests, KV-cache usage, preemptions), a row of
 * engine_metrics. name is causeway's name for it (the engine's table of
 * names maps the engine's own), e.g. "queue_depth", "running",
 * "kv_cache_usage_ratio", "preemptions_total". */
struct cw_engine_metric_row {
	uint32_t pid;        /* the engine's process, 0 unknown (stored NULL) */
	uint32_t port;       /* the port scraped, 0 unknown (stored NULL) */
	const char *engine;  /* "vllm", "sglang", "tgi", "llama.cpp", "triton", ... */
	const char *name;
	double value;        /* finite or infinite; NaN is refused (-EINVAL, not stored) */
	uint64_t wall_ns;    /* when it was scraped */
};

struct cw_snapshot_row {
	uint64_t mono_ns, wall_ns;
	double cpu_pct, mem_pct, load1, io_busy_pct;
	int64_t swap_used_bytes, page_alloc_per_s, io_bytes_per_s;
	int ncpu;
};

struct cw_process_row {
	uint32_t pid, ppid;
	const char *comm, *cmdline;
	uint64_t cgroup_id;
	int rank, local_rank, world_size; /* -1 unknown */
	uint64_t start_wall_ns;
	int has_exit;
	int exit_code;
};

/* A cgroups row as stored; tenant/ parses or resolves the identity
 * (tenant/cgroup_row.h). A NULL field is stored as NULL. */
struct cw_cgroup_ident {
	uint64_t cgroup_id;
	const char *path;
	const char *container; /* the legacy container column */
	const char *runtime, *container_id, *pod, *pod_uid, *ns, *qos, *slurm_job, *slurm_step, *unit;
	const char *tenant;    /* the tenant key (tenant.h cw_tenant_key) */
	uint64_t seen_wall_ns; /* 0 unknown */
};

/* One pressure sample of a cgroup; -1 in any field: not offered. */
struct cw_pressure_row {
	uint64_t cgroup_id;
	uint64_t wall_ns, mono_ns;
	int64_t psi_total_us[6]; /* cpu some/full, memory some/full, io some/full */
	double psi_avg10[3];     /* cpu, memory, io "some" avg10 */
	int64_t nr_periods, nr_throttled, throttled_usec;
	int64_t quota_us, period_us; /* cpu.max or cpu.cfs_quota_us/period_us; quota -1 unlimited */
};

/* NCCL rows (pipeline/nccl_track.c). Optional integers hold CW_NCCL_NONE
 * when unknown and are stored as NULL. */
#define CW_NCCL_NONE INT64_MIN
struct cw_nccl_call_row {
	uint32_t pid, tid;
	int64_t comm, comm_id, rank, nranks;
	int64_t seq;
	const char *op;
	int64_t count, datatype, bytes, redop, peer, stream;
	uint64_t wall_ns, mono_ns, duration_ns;
	int64_t ret; /* CW_NCCL_NONE: unfinished */
	int64_t done_wall_ns, wait_ns; /* CW_NCCL_NONE: unknown */
};

/* An upsert on (pid, comm): fields left CW_NCCL_NONE (op NULL) keep what
 * the row has, so a destroy or an async error updates the creation row. */
struct cw_nccl_comm_row {
	uint32_t pid;
	int64_t comm;
	int64_t comm_id, nranks, rank, parent_id;
	const char *op;
	int64_t created_wall_ns, destroyed_wall_ns, async_error;
};

struct cw_writer_stats {
	uint64_t events, offcpu, snapshots, batches, pruned_events;
	/* Inference (schema v11): request rows stored, of those counted in
	 * request_totals under route "other" (the node's route cap was
	 * reached), and engine metric samples stored. */
	uint64_t requests, requests_other_route, engine_metrics;
	/* Requests the size cap pruned, of those slow or failed ones (last),
	 * and engine metric samples pruned (store/retention.h). */
	uint64_t pruned_requests, pruned_requests_kept, pruned_engine_metrics;
	/* Rows the size cap pruned, per tier (store/retention.h). */
	uint64_t pruned_ordinary, pruned_evidence, pruned_recent, pruned_kept, pruned_context, pruned_chains;
	int64_t pruned_through_wall_ns; /* ordinary calls before it are pruned; 0 none */
	/* Rows the store refused or lost with a rolled-back batch. */
	uint64_t failed_rows;
	int last_error; /* -errno of the latest failed write (-ENOSPC: disk full), 0 none */
	int failing;    /* the latest write failed and no commit succeeded since */
	/* Threaded mode: how often and how long the caller waited on a full
	 * queue (back-pressure, never a loss). */
	uint64_t backpressure_waits, backpressure_ns;
};

int cw_session_begin(struct cw_store *st, const struct cw_session_info *info, int64_t *id);
int cw_session_end(struct cw_store *st, int64_t id, uint64_t ended_wall_ns, int64_t mono_to_wall_ns);

int cw_writer_new(struct cw_writer **out, struct cw_store *st, const struct cw_writer_opts *opts);
/* Flushes and frees. */
int cw_writer_free(struct cw_writer *w);

int cw_writer_event(struct cw_writer *w, const struct cw_event_row *row);
int cw_writer_offcpu(struct cw_writer *w, const struct cw_offcpu_row *row);
/* A request's row and its count in request_totals, in one savepoint of
 * the open batch: both are stored or neither. Text from the wire is
 * stored bounded and printable (store/requests.h). */
int cw_writer_request(struct cw_writer *w, const struct cw_request_row *row);
int cw_writer_engine_metric(struct cw_writer *w, const struct cw_engine_metric_row *r);
int cw_writer_snapshot(struct cw_writer *w, const struct cw_snapshot_row *row);
int cw_writer_process(struct cw_writer *w, const struct cw_process_row *row);
int cw_writer_thread(struct cw_writer *w, uint32_t pid, uint32_t tid, const char *comm);
/* A cgroup and its identity; seen_wall_ns sets first seen for a new row
 * and moves last seen. */
int cw_writer_cgroup_ident(struct cw_writer *w, const struct cw_cgroup_ident *r);
int cw_writer_cgroup_seen(struct cw_writer *w, uint64_t cgroup_id, uint64_t wall_ns);
int cw_writer_cgroup_pressure(struct cw_writer *w, const struct cw_pressure_row *r);
int cw_writer_kernel_name(struct cw_writer *w, uint32_t pid, uint64_t handle, const char *name);
int cw_writer_nccl_call(struct cw_writer *w, const struct cw_nccl_call_row *row);
int cw_writer_nccl_comm(struct cw_writer *w, const struct cw_nccl_comm_row *row);
/* Interning: returns the row id (> 0) for hash, inserting when new. */
int64_t cw_writer_intern_stack(struct cw_writer *w, uint64_t hash, int depth, const char *frames);
/* python_via: the TID whose stack this is when it was attributed to a
 * thread without Python frames (stored in py_stacks.python_via), else 0. */
int64_t cw_writer_intern_pystack(struct cw_writer *w, uint64_t hash, int depth, const char *frames_json,
				 const char *user_file, int user_line, const char *user_function, int64_t python_via);
/* Returns 1 and the id when hash was interned by this writer already, so
 * callers can skip building the frames text. */
int cw_writer_pystack_cached(struct cw_writer *w, uint64_t hash, int64_t *id);

/* Counters are kept in memory and written on flush (absolute values). */
void cw_writer_counter_set(struct cw_writer *w, const char *name, uint64_t value);
/* n rows other code just wrote on the writer's connection (holding
 * cw_writer_db_lock, which it may keep held for this call), added to
 * counter name once they are committed: inside the writer's open batch
 * they commit with it, and a batch that rolls back (a failed COMMIT, a
 * full disk) adds them to lost_name instead; outside any transaction
 * they are committed already. The stored counter rows of a batch count
 * its own pending rows. */
void cw_writer_counter_add_committed(struct cw_writer *w, const char *name, const char *lost_name, uint64_t n);
/* Calls summarized in the kernel (trace --capture summary): merged into
 * the op's aggregate of that wall second and into the median the anomaly
 * flag compares with, as if each had been an event row, and into pid's
 * row of the folded table (per-process percentiles, explain --pid). */
int cw_writer_folded(struct cw_writer *w, uint32_t pid, const char *source, const char *op, int64_t second,
		     const struct cw_hist *h);
/* The running median of the op's durations, every call so far; 0 before
 * the op has enough samples for the anomaly flag. */
uint64_t cw_writer_op_median(const struct cw_writer *w, const char *source, const char *op);

/* Opens a batch now. Returns 0, -EBUSY when another process holds the
 * write lock (nothing counted as failed), or -errno. */
int cw_writer_try_begin(struct cw_writer *w);
/* The session rows belong to once its row exists (written late when the
 * store was locked at start). Call between batches. */
void cw_writer_set_session(struct cw_writer *w, int64_t session_id);
/* Writes the session row as the first row of a batch (opening one) unless
 * the writer has a session; a batch that fails later takes the row with
 * it and the next call writes it again. Returns 0, -EBUSY or -errno. */
int cw_writer_session_begin(struct cw_writer *w, const struct cw_session_info *info);
int64_t cw_writer_session(const struct cw_writer *w);

/* Commits the open batch and the aggregates of every second seen so far;
 * enforces the size cap. */
int cw_writer_flush(struct cw_writer *w);
void cw_writer_get_stats(const struct cw_writer *w, struct cw_writer_stats *out);

/* Other code that runs statements on the writer's connection itself (the
 * GPU tables, late session facts) holds this around them: in threaded
 * mode the writer thread uses the connection too, and it is opened
 * without SQLite's own mutex. Not to be held across a cw_writer_* call. */
void cw_writer_db_lock(struct cw_writer *w);
void cw_writer_db_unlock(struct cw_writer *w);

#endif
