/* Reading events without knowing the file's layout.
 *
 * Schema v7 keeps events in two tables, calls (traced calls, narrow rows
 * keyed by thread and op) and kevents (kernel-side events), under a view
 * named events; an older file read as it is keeps them in one wide events
 * table. Readers that can read the events view read it; readers that must
 * not scan it (min(), max(), ORDER BY id and counts over the view read its
 * compound whole) ask for one of the reads below, and store/ picks the
 * SQL for the file's layout. */
#ifndef CW_STORE_LAYOUT_H
#define CW_STORE_LAYOUT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* The smallest and largest event ids (0 when there is none), read by key
 * from the tables under the events view. 0 or -errno. */
int cw_events_id_bounds(sqlite3 *db, int64_t *min_id, int64_t *max_id);
/* The smallest event id whose wall_ns is >= wall, by binary search over
 * the rowid (rows are appended in roughly time order); 1 past the last id
 * when none. Lets scans of a time range start and stop by rowid. */
int cw_events_id_at(sqlite3 *db, uint64_t wall, int64_t *id);
/* 1 when the file has the named index (schema v3 adds partial indexes a
 * v2 file opened read-only lacks), 0 when not, or -errno. */
int cw_events_has_index(sqlite3 *db, const char *name);
/* Prepares sql, a query of the events view that reads only the columns id,
 * node, pid, tid, comm, source, op, duration_ns, mono_ns and wall_ns, from
 * a source without the view's detail, argument and flag columns (each a
 * lookup per call) where the file has one: a third less time for scans of
 * many events. Returns a SQLite result code. */
int cw_events_prepare_light(sqlite3 *db, const char *sql, sqlite3_stmt **st);

/* Reads whose SQL depends on the layout (reads.c holds each one's text for
 * both layouts, with its parameters and columns). */
enum cw_read {
	/* count of every event; no parameter. */
	CW_READ_EVENTS_COUNT,
	/* The anomalous calls of op ?1 of source ?2 with wall_ns in [?3, ?4),
	 * slowest first, at most ?5; columns: wall_ns, duration_ns, pid,
	 * tid, comm, rank, user_file, user_line, user_function, ret, id. */
	CW_READ_OP_SLOWEST,
	/* The same for the other calls, ids in [?6, ?7). */
	CW_READ_OP_SLOWEST_RANGE,
	/* The timeline's CUDA lane (routes_timeline.c binds ?1-?8). */
	CW_READ_TIMELINE_CUDA,
	/* The id of the slowest anomalous event of op ?1 (of pid ?2, in
	 * wall [?3, ?4); 0 any). */
	CW_READ_SLOWEST_EVENT,
	/* Stacks of op ?1 (NULL any) and pid ?2 (0 any), by total time, at
	 * most ?3: stack_id, py_stack_id, count, sum, max, min(id), op. */
	CW_READ_STACKS,
	/* The pids of events in cgroup ?1 (repeats possible). */
	CW_READ_CGROUP_PIDS,
	/* The cgroup of an anomalous event of op ?3 of node ?1, pid ?2. */
	CW_READ_SLOW_CGROUP,
	/* The cgroup of any event of node ?1, pid ?2. */
	CW_READ_PID_CGROUP,
	/* The summary's window in wall seconds: min, max. */
	CW_READ_SUMMARY_WINDOW,
	/* Events from wall ?1: source, op, py_stack_id, duration_ns, pid, ret. */
	CW_READ_SUMMARY_EVENTS,
	/* source, op, py_stack_id, duration_ns, pid, the cgroups row's rowid,
	 * node, cgroup_id, tenant, ret. */
	CW_READ_SUMMARY_EVENTS_TENANT,
	CW_READ_COUNT
};
/* The SQL of read r for db's layout into *sql (static text). 0 or -errno. */
int cw_store_read_sql(sqlite3 *db, enum cw_read r, const char **sql);

/* Reads of one op's events whose SQL depends on which table holds that
 * op's rows: kevents (kernel-side events, and every event of an older file,
 * where kevents names its events table) or, for a traced call's op in a
 * schema v7 file, calls. */
enum cw_op_read {
	/* The anomalous events of op ?1 at least ?2 long, of node ?3, wall
	 * [?4, ?5], pid ?6 (0 any), slowest first, at most ?7; columns:
	 * mono_ns, duration_ns, wall_ns, pid, tid, comm, device, py_stack_id,
	 * id, stack_id. */
	CW_OP_READ_SLOWEST,
	/* The same for the others with ids in [?8, ?9], by id (an op's first
	 * calls: the writer flags a call anomalous only once its op has 32
	 * samples). */
	CW_OP_READ_FIRST,
	/* A chain's identity sample: the anomalous events of op ?1 of node
	 * ?2, wall [?3, ?4], pid ?5 (0 any), slowest first, at most 256, when
	 * ?6 <= ?7; columns: duration_ns, pid, tid, comm, py_stack_id,
	 * stack_id. */
	CW_OP_READ_IDENTITY,
	/* The same columns for any event of the op with ids in [?6, ?7], by
	 * id, at most 256 (an op without anomalies). */
	CW_OP_READ_IDENTITY_RANGE,
	/* The traced calls (sources cuda, driver, graph, nccl) of op ?1 of
	 * node ?2, pid ?3, ids in [?4, ?5]: columns count, how many returned
	 * 0 (or no code), the largest id of those (NULL none). A calls file
	 * reads the table itself, not the events view: no join per call. */
	CW_OP_READ_CALL_TOTALS,
	CW_OP_READ_COUNT
};
/* The SQL of read r of op's events into *sql (static text). 0 or -errno. */
int cw_store_op_read_sql(sqlite3 *db, const char *op, enum cw_op_read r, const char **sql);

/* One event of cw_events_scan_back; the strings live until the next row. */
struct cw_scan_row {
	int64_t id, pid, tid;
	const char *comm, *source, *op;
	uint64_t mono, dur, wall;
};
/* Calls fn for node's events with ids in [lo, hi], newest first, at most
 * max_rows of any node. Returns 0 or -errno. */
int cw_events_scan_back(sqlite3 *db, const char *node, int64_t lo, int64_t hi, int max_rows,
			void (*fn)(const struct cw_scan_row *row, void *arg), void *arg);

#endif
