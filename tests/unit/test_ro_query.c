/* store/ro_query: user SQL is read-only, single-statement, time-limited
 * and row-capped. */
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

#include "store/ro_query.h"
#include "store/store.h"

static char path[64];

static int count_events(void)
{
	struct cw_store *st;
	sqlite3_stmt *s;
	char err[256];
	int n;

	assert_int_equal(cw_store_open(&st, path, CW_STORE_READONLY, err, sizeof(err)), 0);
	assert_int_equal(sqlite3_prepare_v2(st->db, "SELECT count(*) FROM events", -1, &s, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	n = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	cw_store_close(st);
	return n;
}

static int setup(void **state)
{
	struct cw_store *st;
	char err[256];
	int fd, i;

	(void)state;
	strcpy(path, "/tmp/cw-test-roq-XXXXXX");
	fd = mkstemp(path);
	close(fd);
	unlink(path);
	if (cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)))
		return -1;
	for (i = 0; i < 10; i++) {
		char sql[256];

		snprintf(sql, sizeof(sql),
			 "INSERT INTO events (node, seq, wall_ns, mono_ns, pid, tid, source, op, duration_ns, detail)"
			 " VALUES ('n1', %d, %d, %d, 100, 101, 'cuda', 'cudaMalloc', %d, 'a,b')",
			 i, 1000 + i, i, (i + 1) * 1000);
		if (cw_exec(st->db, sql))
			return -1;
	}
	cw_store_close(st);
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

struct rows {
	int n;
	int64_t sum;
	char first_name[32];
};

static int on_row(void *arg, int ncols, const char *const *names, const struct cw_ro_value *vals)
{
	struct rows *r = arg;

	if (!r->n && ncols)
		snprintf(r->first_name, sizeof(r->first_name), "%s", names[0]);
	if (ncols && vals[0].type == CW_RO_INT)
		r->sum += vals[0].i;
	r->n++;
	return 0;
}

static int run(const char *sql, struct cw_ro_query_info *info, char *err, size_t errlen)
{
	struct rows r = { 0, 0, "" };

	return cw_ro_query_run(path, sql, NULL, 0, NULL, on_row, &r, info, err, errlen);
}

static void test_select_works(void **state)
{
	struct cw_ro_query_info info;
	struct rows r = { 0, 0, "" };
	char err[256] = "";

	(void)state;
	assert_int_equal(cw_ro_query_run(path, "SELECT duration_ns AS d FROM events ORDER BY seq", NULL, 0, NULL,
					 on_row, &r, &info, err, sizeof(err)),
			 0);
	assert_int_equal(r.n, 10);
	assert_int_equal(r.sum, 55000);
	assert_string_equal(r.first_name, "d");
	assert_int_equal(info.rows, 10);
	assert_int_equal(info.truncated, 0);
	/* Reading the schema and read-only PRAGMAs is allowed. */
	assert_int_equal(run("PRAGMA table_info(events)", NULL, err, sizeof(err)), 0);
	assert_int_equal(run("SELECT name FROM pragma_table_info('events')", NULL, err, sizeof(err)), 0);
	assert_int_equal(run("PRAGMA user_version", NULL, err, sizeof(err)), 0);
	assert_int_equal(run("SELECT name FROM sqlite_master -- trailing comment\n ;  ", NULL, err, sizeof(err)), 0);
}

static void test_writes_refused(void **state)
{
	static const struct {
		const char *sql;
		const char *what;
	} cases[] = {
		{ "INSERT INTO meta (key, value) VALUES ('x', 'y')", "INSERT" },
		{ "UPDATE events SET duration_ns = 0", "UPDATE" },
		{ "DELETE FROM events", "DELETE" },
		{ "UPDATE sqlite_master SET sql = ''", "UPDATE" },
		{ "CREATE TABLE t (x)", "CREATE TABLE" },
		{ "CREATE TEMP TABLE t (x)", "CREATE TABLE" },
		{ "CREATE INDEX i ON kevents (pid)", "CREATE INDEX" },
		{ "DROP TABLE events", "DROP TABLE" },
		{ "ALTER TABLE kevents ADD COLUMN z", "ALTER TABLE" },
		{ "ATTACH DATABASE '/tmp/cw-roq-attach.db' AS other", "ATTACH" },
		{ "PRAGMA journal_mode = DELETE", "PRAGMA journal_mode" },
		{ "PRAGMA query_only = 0", "PRAGMA query_only" },
		{ "PRAGMA user_version = 7", "PRAGMA user_version" },
		{ "PRAGMA writable_schema = 1", "PRAGMA writable_schema" },
		{ "VACUUM", "VACUUM" },
		{ "VACUUM INTO '/tmp/cw-roq-copy.db'", "VACUUM" },
		{ "BEGIN", "BEGIN" },
		{ "REINDEX", "REINDEX" },
		{ "ANALYZE", "ANALYZE" },
		{ "SELECT load_extension('/tmp/x.so')", "load_extension" },
		{ "WITH x AS (SELECT 1) INSERT INTO meta SELECT 'k', 'v' FROM x", "INSERT" },
	};
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		int rc = run(cases[i].sql, NULL, err, sizeof(err));

		if (rc != -EPERM)
			fail_msg("%s: rc %d, err \"%s\"", cases[i].sql, rc, err);
		assert_non_null(strstr(err, "query is read-only: "));
		if (!strstr(err, cases[i].what))
			fail_msg("%s: \"%s\" lacks \"%s\"", cases[i].sql, err, cases[i].what);
	}
	/* Nothing was written, nothing was created. */
	assert_int_equal(count_events(), 10);
	assert_int_equal(access("/tmp/cw-roq-attach.db", F_OK), -1);
	assert_int_equal(access("/tmp/cw-roq-copy.db", F_OK), -1);
}

static void test_one_statement(void **state)
{
	char err[256];

	(void)state;
	assert_int_equal(run("SELECT 1; DELETE FROM events", NULL, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "only one statement"));
	assert_int_equal(run("SELECT 1; SELECT 2", NULL, err, sizeof(err)), -EINVAL);
	assert_int_equal(run("  ;  -- nothing\n", NULL, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "empty query");
	assert_int_equal(count_events(), 10);
}

static void test_sql_errors(void **state)
{
	char err[256];

	(void)state;
	assert_int_equal(run("SELECT * FROM foo", NULL, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "sql error: no such table: \"foo\"");
	assert_int_equal(run("SELEC 1", NULL, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "sql error: near \"SELEC\": syntax error");
	assert_false(cw_ro_is_db_error(-EINVAL));
	assert_true(cw_ro_is_db_error(-ENOENT));
	assert_int_equal(cw_ro_query_run("/nonexistent/cw.db", "SELECT 1", NULL, 0, NULL, NULL, NULL, NULL, err,
					 sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "does not exist"));
}

static void test_time_limit(void **state)
{
	struct cw_ro_query_limits lim = { 200 * 1000000ULL, 0 };
	struct cw_ro_query_info info;
	char err[256];
	int rc;

	(void)state;
	/* An endless recursive CTE that returns no rows: only the progress
	 * handler can stop it. */
	rc = cw_ro_query_run(path,
			     "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
			     "SELECT count(*) FROM c",
			     NULL, 0, &lim, NULL, NULL, &info, err, sizeof(err));
	assert_int_equal(rc, -ETIMEDOUT);
	assert_string_equal(err, "query exceeded 200 ms limit");
	assert_true(info.elapsed_ns >= 200 * 1000000ULL);
	assert_true(info.elapsed_ns < 3000 * 1000000ULL);
	lim.timeout_ns = 1000000000ULL;
	rc = cw_ro_query_run(path, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c",
			     NULL, 0, &lim, NULL, NULL, NULL, err, sizeof(err));
	assert_int_equal(rc, -ETIMEDOUT);
	assert_string_equal(err, "query exceeded 1 s limit");
}

static void test_row_cap(void **state)
{
	struct cw_ro_query_limits lim = { 0, 4 };
	struct cw_ro_query_info info;
	struct rows r = { 0, 0, "" };
	char err[256];

	(void)state;
	assert_int_equal(cw_ro_query_run(path, "SELECT seq FROM events ORDER BY seq", NULL, 0, &lim, on_row, &r,
					 &info, err, sizeof(err)),
			 0);
	assert_int_equal(r.n, 4);
	assert_int_equal(info.rows, 4);
	assert_int_equal(info.truncated, 1);
	assert_int_equal(info.max_rows, 4);
	/* Exactly at the cap is not truncation. */
	lim.max_rows = 10;
	assert_int_equal(cw_ro_query_run(path, "SELECT seq FROM events", NULL, 0, &lim, NULL, NULL, &info, err,
					 sizeof(err)),
			 0);
	assert_int_equal(info.rows, 10);
	assert_int_equal(info.truncated, 0);
}

static void test_params_and_json(void **state)
{
	struct cw_ro_value p[2] = { { .type = CW_RO_INT, .i = 5000 }, { .type = CW_RO_TEXT, .p = "cudaMalloc", .len = 10 } };
	struct cw_ro_result *res;
	char err[256], *s;
	json_t *j;

	(void)state;
	assert_int_equal(cw_ro_query_collect(path,
					     "SELECT seq, detail, duration_ns / 1000.0 AS us, NULL AS n, x'ff00' AS b, seq"
					     " FROM events WHERE duration_ns > ?1 AND op = ?2 ORDER BY seq LIMIT 2",
					     p, 2, NULL, &res, err, sizeof(err)),
			 0);
	assert_int_equal(res->nrows, 2);
	assert_int_equal(res->ncols, 6);
	j = cw_ro_result_json(res);
	s = json_dumps(j, JSON_COMPACT);
	assert_string_equal(s, "[{\"seq\":5,\"detail\":\"a,b\",\"us\":6.0,\"n\":null,\"b\":\"ff00\",\"seq_2\":5},"
			       "{\"seq\":6,\"detail\":\"a,b\",\"us\":7.0,\"n\":null,\"b\":\"ff00\",\"seq_2\":6}]");
	free(s);
	json_decref(j);
	cw_ro_result_free(res);
	/* A parameter count mismatch is an error, not a NULL bind. */
	assert_int_equal(cw_ro_query_collect(path, "SELECT ?1, ?2", p, 1, NULL, &res, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "2 parameters"));
	/* Empty result keeps its column names. */
	assert_int_equal(cw_ro_query_collect(path, "SELECT seq, op FROM events WHERE 0", NULL, 0, NULL, &res, err,
					     sizeof(err)),
			 0);
	assert_int_equal(res->nrows, 0);
	assert_int_equal(res->ncols, 2);
	assert_string_equal(res->names[1], "op");
	cw_ro_result_free(res);
}

static void test_value_size_capped(void **state)
{
	char err[256];

	(void)state;
	assert_int_equal(run("SELECT length(randomblob(100000000))", NULL, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "too big"));
}

/* The API's answer as text, row by row: the same cells, capped on its
 * length, and its growth counted with SQLite's memory against the
 * statement's 256 MiB bound. */
static void test_json_text(void **state)
{
	struct cw_ro_value p = { .type = CW_RO_INT, .i = 5000 };
	struct cw_ro_json j;
	char err[256];
	json_t *meta;

	(void)state;
	assert_int_equal(cw_ro_query_json(path,
					  "SELECT seq, detail, duration_ns / 1000.0 AS us, NULL AS n, x'ff00' AS b"
					  " FROM events WHERE duration_ns > ?1 AND op = 'cudaMalloc' ORDER BY seq LIMIT 2",
					  &p, 1, NULL, 1 << 20, &j, err, sizeof(err)),
			 0);
	assert_int_equal(j.info.rows, 2);
	assert_int_equal(j.ncols, 5);
	assert_string_equal(j.names[4], "b");
	meta = json_pack("{s:i}", "row_count", 2);
	assert_int_equal(cw_ro_json_finish(&j, meta), 0);
	json_decref(meta);
	assert_string_equal(j.text, "{\"rows\":[[5,\"a,b\",6.0,null,\"ff00\"],[6,\"a,b\",7.0,null,\"ff00\"]],"
				    "\"row_count\":2}");
	assert_int_equal(j.len, strlen(j.text));
	cw_ro_json_free(&j);
	/* No rows: the names still. */
	assert_int_equal(cw_ro_query_json(path, "SELECT seq, op FROM events WHERE 0", NULL, 0, NULL, 1 << 20, &j, err,
					  sizeof(err)),
			 0);
	assert_int_equal(j.ncols, 2);
	assert_string_equal(j.text, "{\"rows\":[");
	cw_ro_json_free(&j);
	/* Past the cap. */
	assert_int_equal(cw_ro_query_json(path, "SELECT hex(zeroblob(1000)) FROM events", NULL, 0, NULL, 4000, &j, err,
					  sizeof(err)),
			 -E2BIG);
	assert_string_equal(err, "result is larger than 0 MiB; select fewer columns or rows");
	assert_null(j.text);
	/* 20 blobs of 16 MB, 640 MB as hex under a 1 GiB cap: the bound on
	 * what the statement holds stops it first. */
	assert_int_equal(cw_ro_query_json(path,
					  "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 20)"
					  " SELECT zeroblob(16000000) FROM r",
					  NULL, 0, NULL, (size_t)1 << 30, &j, err, sizeof(err)),
			 -ENOMEM);
	assert_string_equal(err, "query exceeded the 256 MiB memory limit");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_select_works),   cmocka_unit_test(test_writes_refused),
		cmocka_unit_test(test_one_statement),  cmocka_unit_test(test_sql_errors),
		cmocka_unit_test(test_time_limit),     cmocka_unit_test(test_row_cap),
		cmocka_unit_test(test_params_and_json), cmocka_unit_test(test_value_size_capped),
		cmocka_unit_test(test_json_text),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
