#define _GNU_SOURCE /* asprintf */
/* store/ro_guard: the user connection's limits, the bounded replacements
 * of SQLite's costly functions (same answers as the built-ins), the
 * watchdog, the per-statement heap bound and the bytes a cell is counted. */
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

#include "store/ro_guard.h"
#include "store/ro_query.h"
#include "store/store.h"
#include "util/timeutil.h"

static char path[64];

static int setup(void **state)
{
	struct cw_store *st;
	char err[256];
	int fd;

	(void)state;
	strcpy(path, "/tmp/cw-test-rog-XXXXXX");
	fd = mkstemp(path);
	close(fd);
	unlink(path);
	if (cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)))
		return -1;
	cw_store_close(st);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	cw_store_remove_files(path);
	return 0;
}

/* The one value of a one-row, one-column query as text (NULL as "NULL"),
 * or "error: <message>". */
static char *one(const char *sql)
{
	struct cw_ro_result *r = NULL;
	char err[512], *s;
	int rc = cw_ro_query_collect(path, sql, NULL, 0, NULL, &r, err, sizeof(err));

	if (rc) {
		if (asprintf(&s, "error: %s", err) < 0)
			s = NULL;
		return s;
	}
	assert_int_equal(r->nrows, 1);
	switch (r->vals[0].type) {
	case CW_RO_INT:
		if (asprintf(&s, "%lld", (long long)r->vals[0].i) < 0)
			s = NULL;
		break;
	case CW_RO_TEXT:
		s = strndup(r->vals[0].p, r->vals[0].len);
		break;
	case CW_RO_NULL:
		s = strdup("NULL");
		break;
	default:
		s = strdup("?");
	}
	cw_ro_result_free(r);
	return s;
}

/* The same on a plain SQLite connection: the built-ins. */
static char *builtin(const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	char *s = NULL;

	assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		s = strdup(sqlite3_column_type(st, 0) == SQLITE_NULL ? "NULL"
									: (const char *)sqlite3_column_text(st, 0));
	else if (asprintf(&s, "error: sql error: %s", sqlite3_errmsg(db)) < 0)
		s = NULL;
	sqlite3_finalize(st);
	sqlite3_close(db);
	return s;
}

static void test_same_answers(void **state)
{
	static const char *const exprs[] = {
		"printf('%5.2f|%-4d|%s|%c|%q|%Q|%w|%%|%x|%X|%o|%e|%g', 3.14159, -7, 'ab', 'xyz', 'it''s', NULL,"
		" 'a\"b', 255, 255, 8, 12345.678, 0.0001)",
		"printf('%*d|%-*d|%.*s', 5, 42, 4, 1, 2, 'abcdef')",
		"printf('%!.3f|%,d|%+d|% d|%05d|%#x', 2.5, 1234567, 3, 4, 42, 255)",
		"printf('%s %s %d')",
		"printf('%c', 'é')",
		"printf(NULL)",
		"printf('%n%T%S|%lld|%ld', 5, 6)",
		"printf('%lld|%ld|%5.1s|%-5d|%.0f|%.f', 5, 6, 'abc', 3, 2.5, 7.5)",
		"printf('[%*s][%-*s][%.*f][%*.*f]', -1, '', 3, 'a', -2, 3.14159, -8, 2, 1.5)",
		"printf('%s|%d|%f|%c|%q|%Q', NULL, NULL, NULL, NULL, NULL, NULL)",
		"printf('%d %d %d', 1)",
		"printf('%5%|%-5%|%')",
		"printf('a%5')",
		"printf('a%-')",
		"printf('x%Ty', 1)",
		"printf('a%hb', 1)",
		"printf('')",
		"printf('%,d|%,d|%!5.2e|%#o|%#X|%r|%r|%u|%p', 1234567, -7654321, 123.456, 8, 255, 1, 22, -1, 255)",
		"printf('%-+ 08.3f|%x|%X', 3.5, -1, -2)",
		"printf('%w|%z', 'a\"b', 'z')",
		"printf('%.3c|%5c|%-3c|', 'x', 'y', 'z')",
		"printf('%g|%G|%e|%E', 1e300, 1e-300, 0.0, 1e100)",
		"printf('%.20f|%.15g', 0.1, 0.1)",
		"format('%d-%s', 7, 'x')",
		"'abc' LIKE 'A%'",
		"'abc' LIKE '%B%'",
		"'a%c' LIKE 'a\\%c' ESCAPE '\\'",
		"'abc' LIKE 'a_c'",
		"'abc' LIKE NULL",
		"like('a%', 'ABC')",
		"like('a|%', 'a%', '|')",
		"'abc' GLOB 'a*'",
		"'abc' GLOB 'A*'",
		"'abc' GLOB '[a-c]?c'",
		"x'616263' LIKE 'abc'",
		"'é' LIKE 'É'",
		"instr('hello', 'll')",
		"instr('héllo', 'l')",
		"instr(x'0102', x'02')",
		"instr(x'0102', '2')",
		"instr(12345, 34)",
		"instr('abc', '')",
		"instr('', 'a')",
		"instr('aéb', 'b')",
		"instr('abcabc', 'cab')",
		"instr('abc', 'abcd')",
		"instr('abc', NULL)",
		"replace('aaa', 'a', 'bb')",
		"replace('abc', '', 'x')",
		"trim('xxaxx', 'x')",
		"ltrim('xxa', 'x')",
		"rtrim('axx', 'x')",
		"trim('  a  ')",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(exprs) / sizeof(exprs[0]); i++) {
		char sql[512], *a, *b;

		snprintf(sql, sizeof(sql), "SELECT %s", exprs[i]);
		a = one(sql);
		b = builtin(sql);
		if (!a || !b || strcmp(a, b))
			fail_msg("%s: guarded \"%s\", built-in \"%s\"", sql, a ? a : "(null)", b ? b : "(null)");
		free(a);
		free(b);
	}
}

static void expect_error(const char *sql, const char *want)
{
	uint64_t t0 = cw_monotonic_ns();
	char *s = one(sql);

	if (!s || !strstr(s, want))
		fail_msg("%s: \"%s\" lacks \"%s\"", sql, s ? s : "(null)", want);
	/* Refused before the work, not after (a few 16 MB values at most). */
	assert_true(cw_monotonic_ns() - t0 < 5 * NSEC_PER_SEC);
	free(s);
}

static void test_costly_calls_refused(void **state)
{
	(void)state;
	expect_error("SELECT printf('%.*c', 2147483647, 'x')", "printf(): a width or precision is larger than 100000");
	expect_error("SELECT printf('%100001d', 1)", "a width or precision is larger");
	expect_error("SELECT printf('%.100001f', 1.0)", "a width or precision is larger");
	expect_error("SELECT printf('%*d', -2147483648, 1)", "a width or precision is larger");
	expect_error("SELECT format('%.*c', 200000, 'x')", "format(): a width");
	expect_error("SELECT hex(zeroblob(8000000)) LIKE '%'||hex(zeroblob(400))||'1%'",
		     "like() over 16000000 and 803 bytes is too costly");
	expect_error("SELECT hex(zeroblob(8000000)) GLOB '*'||hex(zeroblob(400))||'1*'", "glob() over");
	expect_error("SELECT 'a' LIKE hex(zeroblob(501))", "LIKE or GLOB pattern too complex");
	expect_error("SELECT instr(hex(zeroblob(8000000)), hex(zeroblob(3000000)))", "instr() over");
	expect_error("SELECT replace(hex(zeroblob(8000000)), hex(zeroblob(3000000)), '')", "replace() over");
	expect_error("SELECT trim(hex(zeroblob(8000000)), hex(zeroblob(50000)))", "trim() over");
	expect_error("SELECT rtrim(hex(zeroblob(8000000)), hex(zeroblob(50000)))", "rtrim() over");
	expect_error("SELECT hex(fts3_tokenizer('simple'))", "query is read-only: fts3_tokenizer() not allowed");
	expect_error("SELECT fts3_tokenizer('simple', x'0000000000000000')", "fts3_tokenizer() not allowed");
	/* A trailing wildcard scans once: allowed on a long text. */
	{
		char *s = one("SELECT hex(zeroblob(8000000)) LIKE '00000000000000000000%'");

		assert_string_equal(s, "1");
		free(s);
	}
}

static void test_limits(void **state)
{
	char sql[8192];
	size_t o = 0;
	int i;

	(void)state;
	expect_error("SELECT randomblob(16777217)", "too big");
	/* 101 compound terms, 201 nested expressions, 33 arguments. */
	o = (size_t)snprintf(sql, sizeof(sql), "SELECT 1");
	for (i = 0; i < 100; i++)
		o += (size_t)snprintf(sql + o, sizeof(sql) - o, " UNION ALL SELECT 1");
	expect_error(sql, "too many terms in compound SELECT");
	o = (size_t)snprintf(sql, sizeof(sql), "SELECT 1");
	for (i = 0; i < 201; i++)
		o += (size_t)snprintf(sql + o, sizeof(sql) - o, "+1");
	expect_error(sql, "Expression tree is too large (maximum depth 200)");
	o = (size_t)snprintf(sql, sizeof(sql), "SELECT max(1");
	for (i = 0; i < 32; i++)
		o += (size_t)snprintf(sql + o, sizeof(sql) - o, ",1");
	snprintf(sql + o, sizeof(sql) - o, ")");
	expect_error(sql, "too many arguments on function max");
	expect_error("SELECT ?1001", "variable number must be between");
}

static void test_heap_bound(void **state)
{
	char sql[1024];
	size_t o;
	int i;

	(void)state;
	o = (size_t)snprintf(sql, sizeof(sql), "SELECT randomblob(16000000)");
	for (i = 0; i < 19; i++)
		o += (size_t)snprintf(sql + o, sizeof(sql) - o, ", randomblob(16000000)");
	expect_error(sql, "query exceeded the 256 MiB memory limit");
	/* The connection and the next statement are fine. */
	{
		char *s = one("SELECT length(randomblob(16000000))");

		assert_string_equal(s, "16000000");
		free(s);
	}
}

static void test_watchdog(void **state)
{
	struct cw_ro_watch w;
	sqlite3 *db;
	sqlite3_stmt *st;
	uint64_t t0;
	int rc;

	(void)state;
	/* No progress handler here: only the watchdog can stop it. */
	assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r) "
					    "SELECT count(*) FROM r", -1, &st, NULL), SQLITE_OK);
	t0 = cw_monotonic_ns();
	assert_int_equal(cw_ro_watch_arm(&w, db, t0 + 200 * NSEC_PER_MSEC), 0);
	rc = sqlite3_step(st);
	assert_int_equal(cw_ro_watch_disarm(&w), 1);
	assert_int_equal(rc, SQLITE_INTERRUPT);
	assert_true(cw_monotonic_ns() - t0 < NSEC_PER_SEC);
	sqlite3_finalize(st);
	/* Disarmed in time: nothing fires. */
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT 1", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(cw_ro_watch_arm(&w, db, cw_monotonic_ns() + 50 * NSEC_PER_MSEC), 0);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(cw_ro_watch_disarm(&w), 0);
	usleep(100000);
	assert_int_equal(sqlite3_reset(st), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	sqlite3_finalize(st);
	sqlite3_close(db);
}

static void test_out_bytes(void **state)
{
	struct cw_ro_value v = { .type = CW_RO_TEXT };
	static const unsigned char hi[] = { 'a', 0xff, 'b' };

	(void)state;
	/* Key "n": 2 + 1 quotes/char, + 8 of punctuation. */
	v.p = "a\"b\n";
	v.len = 4;
	assert_int_equal(cw_ro_value_out_bytes("n", &v), 11 + 2 + 1 + 2 + 1 + 6);
	v.p = hi;
	v.len = 3;
	assert_int_equal(cw_ro_value_out_bytes("n", &v), 11 + 2 + 1 + 3 + 1);
	v.type = CW_RO_BLOB;
	v.len = 1000;
	assert_int_equal(cw_ro_value_out_bytes("n", &v), 11 + 2002);
}

static void test_result_cap_counts_hex(void **state)
{
	struct cw_ro_result *r = NULL;
	char err[512];

	(void)state;
	/* 9 blobs of 16 MB: 144 MB stored, 288 MB as hex. */
	assert_int_equal(cw_ro_query_collect(path,
					     "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i < 9) "
					     "SELECT zeroblob(16000000) FROM r",
					     NULL, 0, NULL, &r, err, sizeof(err)),
			 -E2BIG);
	assert_non_null(strstr(err, "result is larger than 256 MiB"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_answers),
		cmocka_unit_test(test_costly_calls_refused),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_heap_bound),
		cmocka_unit_test(test_watchdog),
		cmocka_unit_test(test_out_bytes),
		cmocka_unit_test(test_result_cap_counts_hex),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
