/* Schema v7's narrow call rows: the v6 -> v7 migration keeps every row of
 * events and of the views built on it; thread, op and detail rows are
 * interned once; the public events view reads back exactly what the writer
 * was given. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/migrate.h"
#include "store/store.h"
#include "store/writer.h"
#include "util/strbuf.h"

static char path[64];

static int setup(void **state)
{
	int fd;

	(void)state;
	strcpy(path, "/tmp/cw-test-narrow-XXXXXX");
	fd = mkstemp(path);
	close(fd);
	unlink(path);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	cw_store_remove_files(path);
	return 0;
}

static int64_t q1(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s;
	int64_t v = -1;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

/* Every row of a query as text, type-tagged, so equal dumps mean equal
 * rows, NULLs and types included. */
static char *dump(sqlite3 *db, const char *sql)
{
	struct strbuf sb = STRBUF_INIT;
	sqlite3_stmt *s;
	char *out;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	while (sqlite3_step(s) == SQLITE_ROW) {
		for (int i = 0; i < sqlite3_column_count(s); i++) {
			const char *t = (const char *)sqlite3_column_text(s, i);

			strbuf_addf(&sb, "%s=%d:%s|", sqlite3_column_name(s, i), sqlite3_column_type(s, i), t ? t : "");
		}
		strbuf_addch(&sb, '\n');
	}
	sqlite3_finalize(s);
	out = strdup(strbuf_str(&sb));
	strbuf_release(&sb);
	return out;
}

static const char *const views[] = {
	"SELECT * FROM events ORDER BY id",
	"SELECT * FROM cuda_events ORDER BY id",
	"SELECT * FROM nccl_events ORDER BY id",
	"SELECT * FROM containers ORDER BY cgroup_id",
	"SELECT count(*), sum(duration_ns), min(wall_ns), max(mono_ns) FROM events WHERE source = 'cuda' AND pid = 10",
};
#define NVIEWS (sizeof(views) / sizeof(views[0]))

/* A v6 file (the wide events table) migrated to v7: every row of events
 * and of every view on it reads the same before and after. */
static void test_v6_migrated(void **state)
{
	static const char rows[] =
		"INSERT INTO events (id, node, seq, session_id, wall_ns, mono_ns, pid, tid, cgroup_id, comm, source, op,"
		" duration_ns, arg0, arg1, arg2, arg3, bytes, detail, ret, device, stack_id, py_stack_id, anomalous) VALUES"
		" (1, 'n1', 1, 1, 1700000000000000500, 5000000500, 10, 11, 77, 'python', 'cuda', 'cudaMalloc', 2000,"
		"  140000000, 1048576, 0, 0, 1048576, NULL, 0, 0, NULL, NULL, 0),"
		" (2, 'n1', 2, 1, 1700000000000001500, 5000001500, 10, 11, 77, 'python', 'cuda', 'cudaLaunchKernel', 900,"
		"  5555, 1, 2, 3, NULL, 'gemm_kernel', 0, 0, 4, 9, 1),"
		" (3, 'n1', 3, 1, 1700000000000002500, 5000002500, 10, 12, 77, 'worker', 'cuda', 'cudaLaunchKernel', 800,"
		"  5555, 1, 2, 3, NULL, 'gemm_kernel', 0, 0, NULL, NULL, 0),"
		" (4, 'n1', 4, 1, 1700000000000003000, 5000003000, 10, 12, 77, 'worker', 'io', 'block_read', 90000,"
		"  2048, 259, 0, NULL, 131072, 'RA', NULL, NULL, NULL, NULL, 0),"
		" (5, 'n1', 5, 1, 1700000000000004000, 5000004000, 10, 13, 77, 'nccl', 'nccl', 'ncclAllReduce', 70000,"
		"  1, 2, 3, 4, 4096, NULL, 0, 1, NULL, NULL, 0),"
		/* another node, merged: its own sequence and offset, no session */
		" (6, 'n2', 40, NULL, 1700000000900004000, 7000004000, 20, 21, NULL, NULL, 'driver', 'cuLaunchKernel', 500,"
		"  NULL, NULL, NULL, NULL, NULL, 'unfinished', NULL, NULL, NULL, NULL, 0),"
		/* a call 3 s later on thread 11: past its stretch of 2^31 ns */
		" (7, 'n1', 7, 1, 1700000003000000500, 8000000500, 10, 11, 77, 'python', 'cuda', 'cudaFree', 3000,"
		"  140000000, NULL, NULL, NULL, NULL, NULL, -2, 0, NULL, NULL, 0),"
		" (8, 'n1', 8, 1, 1700000003000001500, 8000001500, 10, 11, 77, 'python', 'net', 'tcp_retransmit', 0,"
		"  2, 1, NULL, NULL, NULL, '10.0.0.1:1->10.0.0.2:2', NULL, NULL, NULL, NULL, 0);"
		"INSERT INTO cgroups (node, cgroup_id, path, container_id) VALUES ('n1', 77, '/docker/abc', 'abc');";
	char *before[NVIEWS], *after;
	struct cw_store *st;
	char err[256];
	sqlite3 *db;
	int found;

	(void)state;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(cw_migrate_to(db, 6, &found), 0);
	assert_int_equal(found, 0);
	assert_int_equal(cw_exec(db, rows), 0);
	for (size_t i = 0; i < NVIEWS; i++)
		before[i] = dump(db, views[i]);
	sqlite3_close(db);

	assert_int_equal(cw_store_open(&st, path, CW_STORE_READWRITE, err, sizeof(err)), 0);
	assert_int_equal(q1(st->db, "PRAGMA user_version"), CW_SCHEMA_VERSION);
	for (size_t i = 0; i < NVIEWS; i++) {
		after = dump(st->db, views[i]);
		if (strcmp(before[i], after))
			fail_msg("%s differs:\nbefore\n%s\nafter\n%s", views[i], before[i], after);
		free(after);
		free(before[i]);
	}
	/* calls in the narrow table, kernel-side events whole */
	assert_int_equal(q1(st->db, "SELECT count(*) FROM calls"), 6);
	assert_int_equal(q1(st->db, "SELECT count(*) FROM kevents"), 2);
	/* threads 11 (two stretches), 12, 13 and node n2's 21 */
	assert_int_equal(q1(st->db, "SELECT count(*) FROM call_threads"), 5);
	assert_int_equal(q1(st->db, "SELECT count(*) FROM strings"), 2);
	/* the sequence is stored only where it is not the id */
	assert_int_equal(q1(st->db, "SELECT count(*) FROM calls WHERE sq IS NOT NULL"), 1);
	/* the partial indexes follow their rows */
	assert_int_equal(q1(st->db, "SELECT count(*) FROM sqlite_master WHERE name IN ('calls_slow', 'events_slow',"
				    " 'events_io', 'events_retx', 'events_oom', 'events_pagealloc')"),
			 6);
	cw_store_close(st);
}

/* The writer interns a thread once per 2^31 ns stretch and offset, an op
 * once, a detail once; the view reads back the exact times. */
static void test_writer_interns(void **state)
{
	struct cw_writer_opts wo = { .node = "n", .session_id = 3 };
	struct cw_event_row r;
	struct cw_writer *w;
	struct cw_store *st;
	char err[256];

	(void)state;
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_writer_new(&w, st, &wo), 0);
	memset(&r, 0, sizeof(r));
	r.source = "cuda";
	r.device = 0;
	r.has_ret = 1;
	r.nargs = 4;
	r.pid = 100;
	r.cgroup_id = 5;
	for (int i = 0; i < 1000; i++) {
		r.tid = 100 + (uint32_t)(i % 2);
		r.comm = i % 2 ? "loader" : "python";
		r.op = i % 3 ? "cudaLaunchKernel" : "cudaMemcpyAsync";
		r.detail = i % 3 ? "void gemm<128>(float*)" : "HtoD";
		r.mono_ns = 10737418240ULL + (uint64_t)i * 1000000; /* 5 * 2^31: 1 s of one stretch */
		r.wall_ns = r.mono_ns + 1700000000000000000ULL;
		r.duration_ns = 1000 + (uint64_t)i;
		r.args[0] = i;
		assert_int_equal(cw_writer_event(w, &r), 0);
	}
	/* thread 100 again, 3 s later: a new stretch; then with the clock
	 * offset re-measured: a new offset */
	r.tid = 100;
	r.comm = "python";
	r.mono_ns = 13000000000ULL;
	r.wall_ns = r.mono_ns + 1700000000000000000ULL;
	assert_int_equal(cw_writer_event(w, &r), 0);
	r.mono_ns += 1000;
	r.wall_ns = r.mono_ns + 1700000000000000000ULL + 37;
	assert_int_equal(cw_writer_event(w, &r), 0);
	/* one argument tuple three times: inline once, then interned */
	r.args[0] = 0x7f1234560000LL;
	r.args[1] = 1 << 20;
	r.args[2] = -1;
	r.args[3] = 3;
	for (int i = 0; i < 3; i++) {
		r.mono_ns += 1000;
		r.wall_ns += 1000;
		assert_int_equal(cw_writer_event(w, &r), 0);
	}
	assert_int_equal(cw_writer_flush(w), 0);
	/* (and calls 1001 and 1002, which repeat call 1000's arguments) */
	assert_int_equal(q1(st->db, "SELECT count(*) FROM call_args"), 2);
	assert_int_equal(q1(st->db, "SELECT count(*) FROM calls WHERE ar IS NOT NULL AND a0 IS NULL"), 4);
	assert_int_equal(q1(st->db, "SELECT count(*) FROM events WHERE id > 1002 AND arg0 = 0x7f1234560000"
				    " AND arg1 = 1048576 AND arg2 = -1 AND arg3 = 3"),
			 3);
	assert_int_equal(q1(st->db, "SELECT count(*) FROM call_threads"), 4);
	assert_int_equal(q1(st->db, "SELECT count(*) FROM call_ops"), 2);
	assert_int_equal(q1(st->db, "SELECT count(*) FROM strings"), 2);
	assert_int_equal(q1(st->db, "SELECT count(*) FROM calls"), 1005);
	/* exact times through the view, every row */
	assert_int_equal(q1(st->db, "SELECT count(*) FROM events WHERE id <= 1000"
				    " AND mono_ns = 10737418240 + (id - 1) * 1000000"
				    " AND wall_ns = mono_ns + 1700000000000000000 AND duration_ns = 999 + id"
				    " AND arg0 = id - 1 AND session_id = 3 AND node = 'n' AND pid = 100 AND cgroup_id = 5"
				    " AND device = 0 AND seq = id AND tid = 100 + (id - 1) % 2"
				    " AND comm = CASE WHEN (id - 1) % 2 THEN 'loader' ELSE 'python' END"
				    " AND detail = CASE WHEN (id - 1) % 3 THEN 'void gemm<128>(float*)' ELSE 'HtoD' END"),
			 1000);
	assert_int_equal(q1(st->db, "SELECT wall_ns - mono_ns FROM events WHERE id = 1002"), 1700000000000000037LL);
	/* a call's offset from its thread row's base fits 4 bytes */
	assert_int_equal(q1(st->db, "SELECT count(*) FROM calls WHERE t < 0 OR t >= 2147483648"), 0);
	cw_writer_free(w);
	cw_store_close(st);
}

/* Rows written through the public view (merge, a user's tool) land in
 * the base tables and read back the same; a delete removes them. */
static void test_view_insert_delete(void **state)
{
	static const char ins[] =
		"INSERT INTO events (node, seq, session_id, wall_ns, mono_ns, pid, tid, cgroup_id, comm, source, op,"
		" duration_ns, arg0, detail, ret, device, anomalous) VALUES"
		" ('x', 1, NULL, 900000005000, 5000, 1, 2, 3, 'c', 'cuda', 'cudaMalloc', 10, 7, 'd', 0, 1, 0),"
		" ('x', 2, NULL, 900000006000, 6000, 1, 2, 3, 'c', 'cuda', 'cudaMalloc', 11, 8, 'd', 0, 1, 1),"
		" ('x', 3, NULL, 900000007000, 7000, 1, 2, 3, 'c', 'io', 'block_write', 12, 9, 'W', NULL, NULL, 0)";
	struct cw_store *st;
	char err[256];

	(void)state;
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_exec(st->db, ins), 0);
	assert_int_equal(q1(st->db, "SELECT count(*) FROM calls"), 2);
	assert_int_equal(q1(st->db, "SELECT count(*) FROM kevents"), 1);
	assert_int_equal(q1(st->db, "SELECT count(*) FROM call_threads"), 1);
	assert_int_equal(q1(st->db, "SELECT sum(id) FROM events"), 6);
	assert_int_equal(q1(st->db, "SELECT count(*) FROM events WHERE wall_ns = 900000000000 + mono_ns"
				    " AND detail IS NOT NULL AND seq = id AND pid = 1"),
			 3);
	assert_int_equal(q1(st->db, "SELECT anomalous FROM events WHERE seq = 2"), 1);
	assert_int_equal(cw_exec(st->db, "DELETE FROM events WHERE seq >= 2"), 0);
	assert_int_equal(q1(st->db, "SELECT count(*) FROM calls"), 1);
	assert_int_equal(q1(st->db, "SELECT count(*) FROM kevents"), 0);
	cw_store_close(st);
}

/* Threaded writer: a store slower than decoding fills the queue; the
 * caller waits (counted as back-pressure) and nothing is lost. Inserts
 * are slowed by a trigger that counts to 2000 for every row. */
static void test_backpressure_counted(void **state)
{
	struct cw_writer_opts wo = { .node = "n", .session_id = 1, .threaded = 1, .queue_rows = 64 };
	struct cw_writer_stats ws;
	struct cw_event_row r;
	struct cw_writer *w;
	struct cw_store *st;
	char err[256];

	(void)state;
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_exec(st->db, "CREATE TEMP TRIGGER slow BEFORE INSERT ON main.calls BEGIN"
					 " SELECT count(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL"
					 " SELECT x + 1 FROM c WHERE x < 2000) SELECT x FROM c); END"),
			 0);
	assert_int_equal(cw_writer_new(&w, st, &wo), 0);
	memset(&r, 0, sizeof(r));
	r.source = "cuda";
	r.op = "cudaLaunchKernel";
	r.comm = "python";
	r.device = 0;
	r.has_ret = 1;
	r.pid = r.tid = 7;
	for (int i = 0; i < 2000; i++) {
		r.mono_ns = 1000000000ULL + (uint64_t)i * 1000;
		r.wall_ns = r.mono_ns + 5;
		r.duration_ns = 100;
		assert_int_equal(cw_writer_event(w, &r), 0);
	}
	assert_int_equal(cw_writer_flush(w), 0);
	cw_writer_get_stats(w, &ws);
	assert_true(ws.backpressure_waits > 0);
	assert_true(ws.backpressure_ns > 0);
	assert_int_equal(ws.events, 2000);
	assert_int_equal(ws.failed_rows, 0);
	assert_int_equal(q1(st->db, "SELECT count(*) FROM events"), 2000);
	/* stored with the session's other counters */
	assert_int_equal(q1(st->db, "SELECT value > 0 FROM counters WHERE name = 'store.backpressure_waits'"), 1);
	assert_int_equal(cw_writer_free(w), 0);
	cw_store_close(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_v6_migrated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writer_interns, setup, teardown),
		cmocka_unit_test_setup_teardown(test_view_insert_delete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backpressure_counted, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
