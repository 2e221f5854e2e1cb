/* Store: open modes and their errors, migrations, retention. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/losses.h"
#include "store/retention.h"
#include "store/store.h"
#include "store/writer.h"
#include "rule_assert.h"

static char path[64];

static int setup(void **state)
{
	int fd;

	(void)state;
	strcpy(path, "/tmp/cw-test-store-XXXXXX");
	fd = mkstemp(path);
	close(fd);
	unlink(path);
	return 0;
}

static int teardown(void **state)
{
	char p[80];

	(void)state;
	unlink(path);
	snprintf(p, sizeof(p), "%s-wal", path);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", path);
	unlink(p);
	return 0;
}

static void test_missing_and_create(void **state)
{
	struct cw_store *st;
	char err[256];
	int v = -1;

	(void)state;
	assert_int_equal(cw_store_open(&st, path, CW_STORE_READONLY, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "does not exist"));
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	sqlite3_stmt *s;
	assert_int_equal(sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &s, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	v = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	assert_int_equal(v, CW_SCHEMA_VERSION);
	cw_store_close(st);
	/* Reopening does not migrate again and read-only works. */
	assert_int_equal(cw_store_open(&st, path, CW_STORE_READONLY, err, sizeof(err)), 0);
	cw_store_close(st);
}

static int int_query(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s;
	int v = -1;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	return v;
}

extern const char cw_schema_v1_sql[];

static void test_v1_file_read_and_migrated(void **state)
{
	static const char has_io_index[] =
		"SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'events_io'";
	struct cw_store *st;
	char err[256];

	(void)state;
	sqlite3 *raw;

	/* A v1 file: the v1 schema alone (later migrations add to it), holding
	 * one request. */
	unlink(path);
	assert_int_equal(sqlite3_open(path, &raw), SQLITE_OK);
	assert_int_equal(cw_exec(raw, cw_schema_v1_sql), 0);
	assert_int_equal(cw_exec(raw, "PRAGMA user_version = 1;"
				      "INSERT INTO events (node, seq, wall_ns, mono_ns, pid, tid, source, op,"
				      " duration_ns) VALUES ('n1', 1, 5, 5, 1, 1, 'io', 'block_write', 7)"),
			 0);
	sqlite3_close(raw);
	/* Read-only: accepted as it is (v2 adds only an index), not migrated. */
	assert_int_equal(cw_store_open(&st, path, CW_STORE_READONLY, err, sizeof(err)), 0);
	assert_int_equal(int_query(st->db, "PRAGMA user_version"), 1);
	assert_int_equal(int_query(st->db, has_io_index), 0);
	cw_store_close(st);
	/* Read-write: migrated to the current version, data kept. */
	assert_int_equal(cw_store_open(&st, path, CW_STORE_READWRITE, err, sizeof(err)), 0);
	assert_int_equal(int_query(st->db, "PRAGMA user_version"), CW_SCHEMA_VERSION);
	assert_int_equal(int_query(st->db, has_io_index), 1);
	assert_int_equal(int_query(st->db, "SELECT duration_ns FROM events WHERE source = 'io'"), 7);
	/* The tenant migration's views read the migrated tables. */
	assert_int_equal(int_query(st->db, "SELECT count(*) FROM cuda_events"), 0);
	assert_int_equal(int_query(st->db, "SELECT count(*) FROM containers"), 0);
	cw_store_close(st);
}

/* v8: python_via, a column of py_stacks. A v7 file holds an attributed
 * stack (frames end with the {"python_via": TID} marker) and an own one:
 * read as it is, the column comes from the marker and the file stays v7;
 * migrated, the column is filled, the own stack's NULL. */
static void test_v7_python_via(void **state)
{
	static const char via_of[] = "SELECT coalesce(python_via, -1) FROM py_stacks WHERE hash = ";
	struct cw_store *st;
	char err[256], q[128];
	sqlite3 *raw;
	int found;

	(void)state;
	unlink(path);
	assert_int_equal(sqlite3_open(path, &raw), SQLITE_OK);
	assert_int_equal(cw_migrate_to(raw, 7, &found), 0);
	assert_int_equal(cw_exec(raw, "INSERT INTO py_stacks (hash, depth, frames, user_file, user_line, user_function)"
				      " VALUES (1, 1, '[{\"file\":\"t.py\",\"line\":9,\"function\":\"w\"},"
				      "{\"python_via\":4242}]', 't.py', 9, 'w'),"
				      " (2, 1, '[{\"file\":\"t.py\",\"line\":3,\"function\":\"f\"}]', 't.py', 3, 'f')"),
			 0);
	sqlite3_close(raw);
	assert_int_equal(cw_store_open(&st, path, CW_STORE_READONLY, err, sizeof(err)), 0);
	snprintf(q, sizeof(q), "%s1", via_of);
	assert_int_equal(int_query(st->db, q), 4242);
	snprintf(q, sizeof(q), "%s2", via_of);
	assert_int_equal(int_query(st->db, q), -1);
	assert_int_equal(int_query(st->db, "PRAGMA user_version"), 7);
	cw_store_close(st);
	assert_int_equal(cw_store_open(&st, path, CW_STORE_READWRITE, err, sizeof(err)), 0);
	assert_int_equal(int_query(st->db, "PRAGMA user_version"), CW_SCHEMA_VERSION);
	assert_int_equal(int_query(st->db, "SELECT count(*) FROM main.pragma_table_info('py_stacks')"
					   " WHERE name = 'python_via'"), 1);
	snprintf(q, sizeof(q), "%s1", via_of);
	assert_int_equal(int_query(st->db, q), 4242);
	snprintf(q, sizeof(q), "%s2", via_of);
	assert_int_equal(int_query(st->db, q), -1);
	cw_store_close(st);
	/* read-only at v8: the table's own column, no view over it */
	assert_int_equal(cw_store_open(&st, path, CW_STORE_READONLY, err, sizeof(err)), 0);
	assert_int_equal(int_query(st->db, "SELECT count(*) FROM temp.sqlite_master WHERE name = 'py_stacks'"), 0);
	snprintf(q, sizeof(q), "%s1", via_of);
	assert_int_equal(int_query(st->db, q), 4242);
	cw_store_close(st);
}

/* One past the newest version this build writes. */
#define CW_SCHEMA_VERSION_NEXT 12
_Static_assert(CW_SCHEMA_VERSION_NEXT == CW_SCHEMA_VERSION + 1, "the next schema version");
#define CW_STR_(x) #x
#define CW_STR(x) CW_STR_(x)

static void test_newer_schema_refused(void **state)
{
	struct cw_store *st;
	char err[256];

	(void)state;
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_exec(st->db, "PRAGMA user_version = " CW_STR(CW_SCHEMA_VERSION_NEXT)), 0);
	cw_store_close(st);
	assert_int_equal(cw_store_open(&st, path, CW_STORE_READWRITE, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "schema version " CW_STR(CW_SCHEMA_VERSION_NEXT)));
	assert_int_equal(cw_store_open(&st, path, CW_STORE_READONLY, err, sizeof(err)), -EPROTO);
}

static void test_corrupt_and_foreign(void **state)
{
	struct cw_store *st;
	char err[256];
	FILE *f;
	sqlite3 *db;

	(void)state;
	f = fopen(path, "w");
	fputs("this is not a database at all, just some text that is long enough............", f);
	fclose(f);
	assert_int_equal(cw_store_open(&st, path, CW_STORE_READONLY, err, sizeof(err)), -ENOTSUP);
	assert_non_null(strstr(err, "not a causeway database"));
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), -ENOTSUP);
	unlink(path);
	/* Another program's SQLite file is never migrated into ours. */
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE songs(x)", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), -ENOTSUP);
}

static void test_locked(void **state)
{
	struct cw_store *st, *st2;
	char err[256];

	(void)state;
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_exec(st->db, "PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE"), 0);
	assert_int_equal(cw_store_open(&st2, path, CW_STORE_READWRITE, err, sizeof(err)), -EBUSY);
	assert_non_null(strstr(err, "locked"));
	cw_exec(st->db, "COMMIT");
	cw_store_close(st);
}

static void test_retention_prunes_oldest_ordinary_first(void **state)
{
	struct cw_writer_opts wo = { .node = "n", .session_id = 0, .batch_rows = 1000 };
	struct cw_event_row r;
	struct cw_writer *w;
	struct cw_store *st;
	char err[256], detail[200];
	int64_t pruned, used;
	int i;

	(void)state;
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_writer_new(&w, st, &wo), 0);
	memset(&r, 0, sizeof(r));
	r.source = "cuda";
	r.op = "cudaMalloc";
	r.has_ret = 1;
	r.device = -1;
	memset(detail, 'x', sizeof(detail) - 1);
	detail[sizeof(detail) - 1] = '\0';
	r.detail = detail;
	/* The detail is interned (one strings row): the rows' size comes
	 * from their arguments, distinct and 8 bytes each. */
	r.nargs = 4;
	for (i = 0; i < 40000; i++) {
		r.mono_ns = r.wall_ns = (uint64_t)i * 1000;
		for (int k = 0; k < 4; k++)
			r.args[k] = (int64_t)(0x9E3779B97F4A7C15ULL * (uint64_t)(i * 4 + k + 1));
		/* Every 100th call is 100x slower: anomalous. */
		r.duration_ns = i % 100 == 99 ? 100000 : 1000;
		assert_int_equal(cw_writer_event(w, &r), 0);
	}
	assert_int_equal(cw_writer_flush(w), 0);
	used = cw_store_used_bytes(st);
	assert_true(used > 2 * 1024 * 1024);
	assert_int_equal(cw_retention_enforce(st, used / 2, &pruned), 0);
	assert_true(pruned > 5000);
	assert_true(cw_store_used_bytes(st) <= used / 2);
	/* Anomalous events outlive ordinary ones of the same age. */
	sqlite3_stmt *s;
	assert_int_equal(sqlite3_prepare_v2(st->db, "SELECT count(*) FROM events WHERE anomalous = 1", -1, &s, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	assert_true(sqlite3_column_int(s, 0) >= 190);
	sqlite3_finalize(s);
	cw_writer_free(w);
	cw_store_close(st);
}

/* Event i of test_event_rows_round_trip: columns vary with different
 * periods, so consecutive rows of the writer's multi-row statement change
 * some parameters and repeat others (NULLs included). */
static void nth_event(int i, struct cw_event_row *r, char *comm, char *detail)
{
	static const char *const ops[] = { "cudaLaunchKernel", "cudaMemcpyAsync", "ncclAllReduce" };
	int k;

	memset(r, 0, sizeof(*r));
	r->mono_ns = 1000000000ULL + (uint64_t)i * 1000;
	r->wall_ns = r->mono_ns + 7;
	r->duration_ns = 100 + (uint64_t)(i % 7) * 10;
	r->pid = 100 + (uint32_t)(i / 50);
	r->tid = 200 + (uint32_t)(i % 3);
	r->cgroup_id = 9;
	snprintf(comm, 16, i % 11 < 5 ? "python" : "worker%d", i % 4);
	r->comm = i % 13 == 12 ? NULL : comm;
	r->op = ops[i % 3];
	r->source = i % 3 == 2 ? "nccl" : "cuda";
	/* Same length, different text; longer; absent. */
	snprintf(detail, 300, "%s%0*d", i % 2 ? "kern_" : "copy_", i % 5 == 4 ? 200 : 3, i % 9);
	r->detail = i % 4 == 3 ? NULL : detail;
	r->nargs = i % 5;
	for (k = 0; k < 4; k++)
		r->args[k] = (int64_t)k * 1000 + i % (k + 2);
	r->has_bytes = i % 2;
	r->bytes = 4096;
	r->has_ret = i % 17 != 16;
	r->ret = i % 6 == 5 ? -2 : 0;
	r->device = i % 8 == 7 ? -1 : 0;
	r->stack_id = i % 10 < 3 ? 0 : 5;
	r->py_stack_id = i % 3 ? 0 : i;
}

static void check_text(sqlite3_stmt *s, int col, const char *want)
{
	if (!want) {
		assert_int_equal(sqlite3_column_type(s, col), SQLITE_NULL);
		return;
	}
	assert_non_null(sqlite3_column_text(s, col));
	assert_string_equal((const char *)sqlite3_column_text(s, col), want);
}

static void check_int(sqlite3_stmt *s, int col, int present, int64_t want)
{
	if (!present) {
		assert_int_equal(sqlite3_column_type(s, col), SQLITE_NULL);
		return;
	}
	assert_int_equal(sqlite3_column_type(s, col), SQLITE_INTEGER);
	assert_int_equal(sqlite3_column_int64(s, col), want);
}

/* The writer inserts events several rows per statement and re-binds only
 * the parameters that changed: every column of every row must still be
 * what was written, across full statements, the remainder written at a
 * flush, and statements after it. */
static void test_event_rows_round_trip(void **state)
{
	struct cw_writer_opts wo = { .node = "n1", .session_id = 3 };
	char err[256], comm[16], detail[300];
	struct cw_event_row r;
	struct cw_writer *w;
	struct cw_store *st;
	sqlite3_stmt *s;
	int i, k, n = 0;

	(void)state;
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_writer_new(&w, st, &wo), 0);
	for (i = 0; i < 300; i++) {
		nth_event(i, &r, comm, detail);
		assert_int_equal(cw_writer_event(w, &r), 0);
		if (i == 100 || i == 101 || i == 170)
			assert_int_equal(cw_writer_flush(w), 0);
	}
	assert_int_equal(cw_writer_flush(w), 0);
	assert_int_equal(sqlite3_prepare_v2(st->db,
					    "SELECT node, seq, session_id, wall_ns, mono_ns, pid, tid, cgroup_id, comm,"
					    " source, op, duration_ns, arg0, arg1, arg2, arg3, bytes, detail, ret, device,"
					    " stack_id, py_stack_id, anomalous FROM events ORDER BY id",
					    -1, &s, NULL),
			 SQLITE_OK);
	while (sqlite3_step(s) == SQLITE_ROW) {
		nth_event(n, &r, comm, detail);
		check_text(s, 0, "n1");
		check_int(s, 1, 1, n + 1);
		check_int(s, 2, 1, 3);
		check_int(s, 3, 1, (int64_t)r.wall_ns);
		check_int(s, 4, 1, (int64_t)r.mono_ns);
		check_int(s, 5, 1, r.pid);
		check_int(s, 6, 1, r.tid);
		check_int(s, 7, 1, 9);
		check_text(s, 8, r.comm);
		check_text(s, 9, r.source);
		check_text(s, 10, r.op);
		check_int(s, 11, 1, (int64_t)r.duration_ns);
		for (k = 0; k < 4; k++)
			check_int(s, 12 + k, k < r.nargs, r.args[k]);
		check_int(s, 16, r.has_bytes, r.bytes);
		check_text(s, 17, r.detail);
		check_int(s, 18, r.has_ret, r.ret);
		check_int(s, 19, r.device >= 0, r.device);
		check_int(s, 20, r.stack_id > 0, r.stack_id);
		check_int(s, 21, r.py_stack_id > 0, r.py_stack_id);
		check_int(s, 22, 1, 0);
		n++;
	}
	sqlite3_finalize(s);
	assert_int_equal(n, 300);
	/* New files get 16 KiB pages. */
	assert_int_equal(sqlite3_prepare_v2(st->db, "PRAGMA page_size", -1, &s, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(s, 0), 16384);
	sqlite3_finalize(s);
	cw_writer_free(w);
	cw_store_close(st);
}

/* Rows the database refuses are counted, never silently lost: 40 events
 * (a full 32-row statement and 8 single rows) refused by a trigger are
 * store.failed_rows = 40, and the writer goes on once the cause is gone. */
static void test_failed_rows_counted(void **state)
{
	struct cw_writer_opts wo = { .node = "n1", .session_id = 1 };
	char err[256], comm[16], detail[300];
	struct cw_event_row r;
	struct cw_writer *w;
	struct cw_store *st;
	sqlite3_stmt *s;
	int i;

	(void)state;
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(sqlite3_exec(st->db,
				      "CREATE TEMP TRIGGER refuse BEFORE INSERT ON main.calls"
				      " BEGIN SELECT RAISE(ABORT, 'refused'); END",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(cw_writer_new(&w, st, &wo), 0);
	for (i = 0; i < 40; i++) {
		nth_event(i, &r, comm, detail);
		cw_writer_event(w, &r);
	}
	assert_true(cw_writer_flush(w) < 0);
	assert_int_equal(sqlite3_exec(st->db, "DROP TRIGGER temp.refuse", NULL, NULL, NULL), SQLITE_OK);
	nth_event(40, &r, comm, detail);
	assert_int_equal(cw_writer_event(w, &r), 0);
	assert_int_equal(cw_writer_flush(w), 0);
	assert_int_equal(sqlite3_prepare_v2(st->db, "SELECT (SELECT count(*) FROM events),"
					    " (SELECT value FROM counters WHERE name = 'store.failed_rows')",
					    -1, &s, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int64(s, 0), 1);
	assert_int_equal(sqlite3_column_int64(s, 1), 40);
	sqlite3_finalize(s);
	assert_int_equal(cw_writer_free(w), 0);
	cw_store_close(st);
}

static int64_t q1(struct cw_store *st, const char *sql)
{
	return store_q1(st->db, sql);
}

/* Retention's edges: a store exactly at its cap is left alone; over it,
 * the oldest ordinary rows go first, down to 90 % of the cap (so the next
 * flush does not prune again), with the off-CPU intervals and snapshots
 * older than every kept event; the writer enforces its size cap on flush and
 * counts what it pruned. The anomaly flag: slower than 3x the op's running
 * median, once the op has 32 samples. */
static void test_retention_edges_and_anomalies(void **state)
{
	struct cw_writer_opts wo = { .node = "n", .session_id = 0, .batch_rows = 1000 };
	struct cw_event_row r;
	struct cw_offcpu_row o;
	struct cw_snapshot_row sn;
	struct cw_writer *w;
	struct cw_store *st;
	char err[256], detail[200];
	int64_t pruned, used, first;
	int i;

	(void)state;
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_writer_new(&w, st, &wo), 0);
	memset(&r, 0, sizeof(r));
	r.source = "cuda";
	r.op = "cudaMalloc";
	r.has_ret = 1;
	r.device = -1;
	memset(detail, 'x', sizeof(detail) - 1);
	detail[sizeof(detail) - 1] = '\0';
	r.detail = detail;
	/* Interned detail: the size comes from distinct 8-byte arguments. */
	r.nargs = 4;
	for (i = 0; i < 10000; i++) {
		r.mono_ns = r.wall_ns = 1000000 + (uint64_t)i * 1000;
		for (int k = 0; k < 4; k++)
			r.args[k] = (int64_t)(0x9E3779B97F4A7C15ULL * (uint64_t)(i * 4 + k + 1));
		/* 1000 ns each; call 40 at exactly 3x (not anomalous), call 41
		 * just above; call 20 far slower but before 32 samples */
		r.duration_ns = i == 40 ? 3000 : i == 41 ? 3001 : i == 20 ? 100000 : 1000;
		assert_int_equal(cw_writer_event(w, &r), 0);
		if (i % 100 == 0) {
			memset(&o, 0, sizeof(o));
			o.pid = o.tid = 1;
			o.comm = "x";
			o.reason = "blocked";
			o.start_mono_ns = r.mono_ns;
			o.end_mono_ns = r.mono_ns + 500;
			o.wall_ns = r.wall_ns;
			assert_int_equal(cw_writer_offcpu(w, &o), 0);
			memset(&sn, 0, sizeof(sn));
			sn.mono_ns = sn.wall_ns = r.mono_ns;
			assert_int_equal(cw_writer_snapshot(w, &sn), 0);
		}
	}
	assert_int_equal(cw_writer_flush(w), 0);
	assert_int_equal(q1(st, "SELECT count(*) FROM events WHERE anomalous = 1"), 1);
	assert_int_equal(q1(st, "SELECT duration_ns FROM events WHERE anomalous = 1"), 3001);
	used = cw_store_used_bytes(st);
	assert_true(used > 1024 * 1024);
	/* at the cap: nothing to do */
	assert_int_equal(cw_retention_enforce(st, used, &pruned), 0);
	assert_int_equal(pruned, 0);
	assert_int_equal(q1(st, "SELECT count(*) FROM events"), 10000);
	/* over it: down to about 90 % of the cap, oldest first */
	assert_int_equal(cw_retention_enforce(st, used - used / 10, &pruned), 0);
	/* The first pass guesses a row's bytes from the whole file (schema
	 * v7's tables and indexes are a third of this 1.5 MB file), the
	 * second from what the first freed: down to 90 % of the cap, give
	 * or take a page, and not far below it. */
	assert_true(pruned >= 1700 && pruned <= 7000);
	assert_true(cw_store_used_bytes(st) <= (used - used / 10) / 10 * 9 + 16384);
	assert_true(cw_store_used_bytes(st) >= (used - used / 10) * 8 / 10);
	assert_int_equal(q1(st, "SELECT count(*) FROM events"), 10000 - pruned);
	/* call 0 is the process's first call of its op: kept (retention.h) */
	assert_int_equal(q1(st, "SELECT count(*) FROM events WHERE mono_ns = 1000000"), 1);
	first = q1(st, "SELECT min(mono_ns) FROM events WHERE anomalous = 0 AND mono_ns > 1000000");
	assert_int_equal(first, 1000000 + (pruned + 2) * 1000); /* calls 0 and 41 were kept */
	assert_int_equal(q1(st, "SELECT max(mono_ns) FROM events"), 1000000 + 9999 * 1000);
	/* the anomalous event (call 41) is older than every kept ordinary one
	 * but outlives them */
	assert_int_equal(q1(st, "SELECT count(*) FROM events WHERE anomalous = 1"), 1);
	/* intervals and snapshots are kept back to the oldest kept event, the
	 * first call (all of them lie within the recent window) */
	assert_int_equal(q1(st, "SELECT count(*) FROM offcpu"), 100);
	assert_int_equal(q1(st, "SELECT min(start_mono_ns) FROM offcpu"), 1000000);
	assert_int_equal(q1(st, "SELECT count(*) FROM snapshots"), 100);
	cw_writer_free(w);
	cw_store_close(st);

	/* the writer's own cap */
	unlink(path);
	assert_true(used > 0);
	/* Three quarters: an empty file of schema v7 is 57 pages, 0.9 MB
	 * of the 1.5 MB one above. */
	wo.size_cap_bytes = used * 3 / 4;
	wo.session_id = 1; /* counters are stored per session */
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_writer_new(&w, st, &wo), 0);
	for (i = 0; i < 10000; i++) {
		r.mono_ns = r.wall_ns = 1000000 + (uint64_t)i * 1000;
		r.duration_ns = 1000;
		for (int k = 0; k < 4; k++)
			r.args[k] = (int64_t)(0x9E3779B97F4A7C15ULL * (uint64_t)(i * 4 + k + 1));
		assert_int_equal(cw_writer_event(w, &r), 0);
	}
	assert_int_equal(cw_writer_flush(w), 0);
	assert_true(cw_store_used_bytes(st) <= used * 3 / 4);
	{
		struct cw_writer_stats ws;

		cw_writer_get_stats(w, &ws);
		assert_true(ws.pruned_events > 4000);
		/* the counter row is written with the next flush */
		assert_int_equal(cw_writer_flush(w), 0);
		assert_int_equal(q1(st, "SELECT value FROM counters WHERE name = 'store.pruned_events'"),
				 (int64_t)ws.pruned_events);
	}
	cw_writer_free(w);
	cw_store_close(st);
}

/* Readers' loss warnings: the share is lost / (stored + folded + lost +
 * aggregated) and sessions that lost nothing are not named. */
static void test_losses_share(void **state)
{
	struct cw_session_loss *l = NULL;
	char err[256], line[768];
	struct cw_store *st;
	int n;

	(void)state;
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(
		sqlite3_exec(st->db,
			     "INSERT INTO sessions (id, node, kind, started_wall_ns, ended_wall_ns, mono_to_wall_ns)"
			     " VALUES (1, 'n1', 'trace', 100, 200, 0), (2, 'n1', 'trace', 300, 400, 0),"
			     " (3, 'n2', 'trace', 100, 200, 0), (4, 'n3', 'trace', 100, 200, 0);"
			     "INSERT INTO counters VALUES ('n3', 4, 'store.events', 300), ('n3', 4, 'trace.cuda.folded', 9600),"
			     " ('n3', 4, 'trace.ring_drops.cuda', 100);"
			     "INSERT INTO counters VALUES ('n1', 1, 'store.events', 700), ('n1', 1, 'store.failed_rows', 200),"
			     " ('n1', 1, 'trace.ring_drops.cuda', 60), ('n1', 1, 'trace.cuda.state_map_full', 40),"
			     " ('n1', 2, 'store.events', 50), ('n2', 3, 'store.events', 10),"
			     " ('n2', 3, 'trace.cuda.aggregated', 10)",
			     NULL, NULL, NULL),
		SQLITE_OK);
	n = cw_store_losses(st->db, NULL, 0, 0, &l);
	assert_int_equal(n, 3);
	/* Summary capture: calls folded in the kernel are calls, not losses. */
	assert_int_equal(l[2].session_id, 4);
	assert_int_equal(l[2].folded, 9600);
	assert_true(l[2].lost_share > 0.0099 && l[2].lost_share < 0.0101);
	cw_session_loss_text(&l[2], line, sizeof(line));
	assert_non_null(strstr(line, "lost 100 of 10000 records (1.0%)"));
	assert_int_equal(l[0].session_id, 1);
	assert_int_equal(l[0].lost, 300);
	assert_int_equal(l[0].store_failed, 200);
	assert_int_equal(l[0].ring_drops, 100);
	assert_true(l[0].lost_share > 0.2999 && l[0].lost_share < 0.3001);
	cw_session_loss_text(&l[0], line, sizeof(line));
	assert_non_null(strstr(line, "session 1 (trace, node \"n1\") lost 300 of 1000 records (30.0%): 200 refused by the store"));
	assert_int_equal(l[1].session_id, 3);
	assert_int_equal(l[1].lost, 0);
	assert_true(l[1].aggregated_share > 0.4999 && l[1].aggregated_share < 0.5001);
	free(l);
	/* The node filter and the window. */
	assert_int_equal(cw_store_losses(st->db, "n2", 0, 0, &l), 1);
	free(l);
	assert_int_equal(cw_store_losses(st->db, NULL, 250, 500, &l), 0);
	free(l);
	cw_store_close(st);
}

/* A write lock held by another connection: the writer says -EBUSY at the
 * start of a batch without counting a failed row, and the session row is
 * written with the first batch once the lock is gone. */
static void test_lock_is_not_a_failure(void **state)
{
	struct cw_writer_opts wo = { .node = "n1", .immediate = 1 };
	struct cw_session_info si = { .node = "n1", .kind = "trace", .started_wall_ns = 1, .rank = -1,
				      .local_rank = -1, .world_size = -1 };
	struct cw_writer_stats ws;
	char err[256], comm[16], detail[300];
	struct cw_event_row r;
	struct cw_writer *w;
	struct cw_store *st;
	sqlite3 *other;
	sqlite3_stmt *s;

	(void)state;
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	sqlite3_busy_timeout(st->db, 0);
	assert_int_equal(cw_writer_new(&w, st, &wo), 0);
	assert_int_equal(sqlite3_open(path, &other), SQLITE_OK);
	assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(cw_writer_try_begin(w), -EBUSY);
	assert_int_equal(cw_writer_session_begin(w, &si), -EBUSY);
	cw_writer_get_stats(w, &ws);
	assert_int_equal(ws.failed_rows, 0);
	assert_int_equal(cw_writer_session(w), 0);
	assert_int_equal(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(other);
	assert_int_equal(cw_writer_session_begin(w, &si), 0);
	assert_true(cw_writer_session(w) > 0);
	nth_event(0, &r, comm, detail);
	assert_int_equal(cw_writer_event(w, &r), 0);
	assert_int_equal(cw_writer_flush(w), 0);
	assert_int_equal(sqlite3_prepare_v2(st->db, "SELECT (SELECT count(*) FROM sessions),"
					    " (SELECT count(*) FROM events WHERE session_id = (SELECT id FROM sessions)),"
					    " (SELECT value FROM counters WHERE name = 'store.events')",
					    -1, &s, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int64(s, 0), 1);
	assert_int_equal(sqlite3_column_int64(s, 1), 1);
	assert_int_equal(sqlite3_column_int64(s, 2), 1);
	sqlite3_finalize(s);
	assert_int_equal(cw_writer_free(w), 0);
	cw_store_close(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_missing_and_create, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v1_file_read_and_migrated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v7_python_via, setup, teardown),
		cmocka_unit_test_setup_teardown(test_newer_schema_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_and_foreign, setup, teardown),
		cmocka_unit_test_setup_teardown(test_locked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retention_prunes_oldest_ordinary_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_event_rows_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_rows_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retention_edges_and_anomalies, setup, teardown),
		cmocka_unit_test_setup_teardown(test_losses_share, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lock_is_not_a_failure, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
