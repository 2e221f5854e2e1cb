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

#include "store/retention.h"
#include "store/store.h"
#include "store/writer.h"

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

static void test_v1_file_read_and_migrated(void **state)
{
	static const char has_io_index[] =
		"SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'events_io'";
	struct cw_store *st;
	char err[256];

	(void)state;
	/* A v1 file: the v1 schema without the v2 index, holding one request. */
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_exec(st->db, "DROP INDEX events_io; PRAGMA user_version = 1;"
					 "INSERT INTO events (node, seq, wall_ns, mono_ns, pid, tid, source, op,"
					 " duration_ns) VALUES ('n1', 1, 5, 5, 1, 1, 'io', 'block_write', 7)"),
			 0);
	cw_store_close(st);
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
	cw_store_close(st);
}

static void test_newer_schema_refused(void **state)
{
	struct cw_store *st;
	char err[256];

	(void)state;
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_exec(st->db, "PRAGMA user_version = 7"), 0);
	cw_store_close(st);
	assert_int_equal(cw_store_open(&st, path, CW_STORE_READWRITE, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "schema version 7"));
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
	for (i = 0; i < 40000; i++) {
		r.mono_ns = r.wall_ns = (uint64_t)i * 1000;
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
				      "CREATE TEMP TRIGGER refuse BEFORE INSERT ON main.events"
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_missing_and_create, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v1_file_read_and_migrated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_newer_schema_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_and_foreign, setup, teardown),
		cmocka_unit_test_setup_teardown(test_locked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retention_prunes_oldest_ordinary_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_event_rows_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_rows_counted, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
