/* The scope of a read (analysis/scope.h): since/from/to and tenant filters
 * from any front end, every refusal worded once, and since anchored on the
 * newest data of a real store. */
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

#include "analysis/scope.h"
#include "store/store.h"
#include "rule_assert.h"

static char path[64];
static char err[512];

/* Parses a scope of since/from/to; returns cw_scope_parse's answer. */
static int parse(struct cw_scope *s, enum cw_scope_names names, const char *since, const char *from, const char *to)
{
	memset(s, 0, sizeof(*s));
	s->names = names;
	s->since = since;
	s->from = from;
	s->to = to;
	err[0] = '\0';
	return cw_scope_parse(s, err, sizeof(err));
}

static void test_nothing_given(void **state)
{
	struct cw_scope s;

	(void)state;
	assert_int_equal(parse(&s, CW_SCOPE_FLAGS, NULL, NULL, NULL), 0);
	assert_int_equal(s.since_ns, 0);
	assert_int_equal(s.from_ns, 0);
	assert_int_equal(s.to_ns, 0);
}

static void test_since_with_from_or_to(void **state)
{
	struct cw_scope s;

	(void)state;
	assert_int_equal(parse(&s, CW_SCOPE_FLAGS, "5m", "1700000000", NULL), -EINVAL);
	assert_string_equal(err, "--since cannot be combined with --from or --to");
	assert_int_equal(parse(&s, CW_SCOPE_PARAMS, "5m", NULL, "1700000000"), -EINVAL);
	assert_string_equal(err, "\"since\" cannot be combined with \"from\" or \"to\"");
	/* Refused before since's own value is looked at. */
	assert_int_equal(parse(&s, CW_SCOPE_PARAMS, "soon", "x", NULL), -EINVAL);
	assert_non_null(strstr(err, "cannot be combined"));
}

static void test_durations(void **state)
{
	struct cw_scope s;

	(void)state;
	assert_int_equal(parse(&s, CW_SCOPE_FLAGS, "5m", NULL, NULL), 0);
	assert_int_equal(s.since_ns, 300 * SEC);
	assert_int_equal(parse(&s, CW_SCOPE_PARAMS, "1.5h", NULL, NULL), 0);
	assert_int_equal(s.since_ns, 5400 * SEC);
	assert_int_equal(parse(&s, CW_SCOPE_PARAMS, "250ms", NULL, NULL), 0);
	assert_int_equal(s.since_ns, 250 * MS);
	static const char *const bad[] = { "0", "0s", "soon", "-5m", "5 parsecs", "1e-300s", "0x10s", "infs", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[128];

		assert_int_equal(parse(&s, i % 2 ? CW_SCOPE_FLAGS : CW_SCOPE_PARAMS, bad[i], NULL, NULL), -EINVAL);
		snprintf(want, sizeof(want), "invalid duration \"%s\" (e.g. 30s, 5m, 2h)", bad[i]);
		assert_string_equal(err, want);
		assert_int_equal(s.since_ns, 0);
	}
	/* User text is shown escaped and cut. */
	assert_int_equal(parse(&s, CW_SCOPE_PARAMS, "a\nb", NULL, NULL), -EINVAL);
	assert_null(strchr(err, '\n'));
}

static void test_times(void **state)
{
	struct cw_scope s;

	(void)state;
	assert_int_equal(parse(&s, CW_SCOPE_FLAGS, NULL, "1700000000", "2023-11-14T22:13:30Z"), 0);
	assert_int_equal(s.from_ns, 1700000000 * SEC);
	assert_int_equal(s.to_ns, 1700000010 * SEC);
	/* Wall ns, as the answers carry them, on every front end. */
	assert_int_equal(parse(&s, CW_SCOPE_FLAGS, NULL, "1700000000123456789", NULL), 0);
	assert_int_equal(s.from_ns, 1700000000123456789ULL);
	assert_int_equal(s.to_ns, 0);
	/* A fraction of a second, an offset. */
	assert_int_equal(parse(&s, CW_SCOPE_PARAMS, NULL, NULL, "2023-11-14T23:13:20.5+01:00"), 0);
	assert_int_equal(s.to_ns, 1700000000 * SEC + 500 * MS);
	static const char *const bad[] = { "yesterday", "2026-13-01T00:00:00Z", "",
					   "99999999999",	   /* seconds past 2262 */
					   "9999999999999999999", /* ns past INT64_MAX */
					   "1970-01-01T00:30:00+01:00", /* before the epoch */
					   "9999-01-01T00:00:00Z" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[128];

		assert_int_equal(parse(&s, CW_SCOPE_FLAGS, NULL, bad[i], NULL), -EINVAL);
		snprintf(want, sizeof(want), "invalid time \"%s\" (RFC 3339, Unix seconds or wall ns)", bad[i]);
		assert_string_equal(err, want);
		assert_int_equal(parse(&s, CW_SCOPE_PARAMS, NULL, NULL, bad[i]), -EINVAL);
		assert_string_equal(err, want);
	}
}

static void test_to_after_from(void **state)
{
	struct cw_scope s;

	(void)state;
	assert_int_equal(parse(&s, CW_SCOPE_FLAGS, NULL, "1700000010", "1700000000"), -EINVAL);
	assert_string_equal(err, "--to \"1700000000\" is not after --from \"1700000010\"");
	assert_int_equal(parse(&s, CW_SCOPE_PARAMS, NULL, "1700000000", "1700000000"), -EINVAL);
	assert_string_equal(err, "to \"1700000000\" is not after from \"1700000000\"");
	assert_int_equal(parse(&s, CW_SCOPE_PARAMS, NULL, "1700000000", "1700000000.000000001"), 0);
	/* One side alone is an open window on the other. */
	assert_int_equal(parse(&s, CW_SCOPE_PARAMS, NULL, NULL, "1700000000"), 0);
	assert_int_equal(s.from_ns, 0);
}

static void test_tenant_names(void **state)
{
	struct cw_scope s = { .names = CW_SCOPE_FLAGS };

	(void)state;
	assert_int_equal(cw_scope_tenant(&s, "--pod", "a b", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "bad --pod \"a b\" (want a pod name or UID)");
	s.names = CW_SCOPE_PARAMS;
	assert_int_equal(cw_scope_tenant(&s, "pod", "a b", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "bad pod \"a b\" (want a pod name or UID)");
	assert_int_equal(s.ntf, 0);
	assert_int_equal(cw_scope_tenant(&s, "since", "5m", err, sizeof(err)), -ENOENT);
	assert_int_equal(cw_scope_tenant(&s, "slurm_job", "42", err, sizeof(err)), 0);
	assert_int_equal(cw_scope_tenant(&s, "namespace", "ml", err, sizeof(err)), 0);
	assert_int_equal(s.ntf, 2);
	for (int i = s.ntf; i < CW_TENANT_FILTERS_MAX; i++)
		assert_int_equal(cw_scope_tenant(&s, "pod", "p", err, sizeof(err)), 0);
	assert_int_equal(cw_scope_tenant(&s, "pod", "p", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "tenant filters"));
}

static struct cw_store *fresh(void)
{
	struct cw_store *st;

	remove_store_files(path);
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	return st;
}

static void exec(struct cw_store *st, const char *sql)
{
	char *e = NULL;

	if (sqlite3_exec(st->db, sql, NULL, NULL, &e) != SQLITE_OK)
		fail_msg("%s: %s", sql, e);
}

static void test_window_anchor(void **state)
{
	struct cw_store *st = fresh();
	struct cw_scope s;

	(void)state;
	/* An empty store has no "last DURATION": the window stays open. */
	assert_int_equal(parse(&s, CW_SCOPE_FLAGS, "5m", NULL, NULL), 0);
	assert_int_equal(cw_scope_window(st->db, &s, 0), 0);
	assert_int_equal(s.from_ns, 0);
	assert_int_equal(s.to_ns, 0);
	/* Calls up to second 1000: the window ends at the end of it. */
	exec(st, "INSERT INTO aggregates (node, source, op, second, count, sum_ns, max_ns, hist)"
		 " VALUES ('n', 'cuda', 'cudaMalloc', 900, 1, 1, 1, x''), ('n', 'cuda', 'cudaMalloc', 1000, 1, 1, 1, x'')");
	assert_int_equal(cw_scope_window(st->db, &s, 0), 0);
	assert_int_equal(s.to_ns, 1001 * SEC);
	assert_int_equal(s.from_ns, 701 * SEC);
	/* A since past the epoch starts at 1 ns (0 would read as open). */
	assert_int_equal(parse(&s, CW_SCOPE_FLAGS, "2h", NULL, NULL), 0);
	assert_int_equal(cw_scope_window(st->db, &s, 0), 0);
	assert_int_equal(s.from_ns, 1);
	assert_int_equal(s.to_ns, 1001 * SEC);
	/* from/to are kept as given. */
	assert_int_equal(parse(&s, CW_SCOPE_FLAGS, NULL, "100", NULL), 0);
	assert_int_equal(cw_scope_window(st->db, &s, 0), 0);
	assert_int_equal(s.from_ns, 100 * SEC);
	assert_int_equal(s.to_ns, 0);
	/* A request newer than every call: the requests' readers count from
	 * it, the others from the last call. */
	exec(st, "INSERT INTO requests (node, wall_ns, mono_ns, pid, tid, conn_id, bytes_in, bytes_out,"
		 " duration_ns, end_reason) VALUES ('n', 2000000000000, 1, 1, 1, 1, 0, 0, 1000, 'done')");
	assert_int_equal(parse(&s, CW_SCOPE_PARAMS, "1m", NULL, NULL), 0);
	assert_int_equal(cw_scope_window(st->db, &s, CW_SCOPE_NEWEST_REQUESTS), 0);
	assert_int_equal(s.to_ns, 2000 * SEC);
	assert_int_equal(s.from_ns, 1940 * SEC);
	assert_int_equal(cw_scope_window(st->db, &s, 0), 0);
	assert_int_equal(s.to_ns, 1001 * SEC);
	assert_int_equal(s.from_ns, 941 * SEC);
	/* A read error is an error, not the whole store. */
	exec(st, "DROP TABLE aggregates");
	assert_true(cw_scope_window(st->db, &s, 0) < 0);
	cw_store_close(st);
}

static void test_select(void **state)
{
	struct cw_store *st = fresh();
	struct cw_scope s = { .names = CW_SCOPE_PARAMS };

	(void)state;
	/* No filter: npids 0, no pids. */
	assert_int_equal(cw_scope_select(st->db, &s), 0);
	assert_int_equal(s.npids, 0);
	assert_null(s.pids);
	exec(st, "INSERT INTO cgroups (node, cgroup_id, path, namespace, pod) VALUES"
		 " ('n', 7, '/kubepods/ml/p1', 'ml', 'p1'), ('n', 8, '/kubepods/web/p2', 'web', 'p2');"
		 "INSERT INTO processes (node, pid, cgroup_id) VALUES ('n', 70, 7), ('n', 71, 7), ('n', 80, 8)");
	assert_int_equal(cw_scope_tenant(&s, "namespace", "ml", err, sizeof(err)), 0);
	assert_int_equal(cw_scope_select(st->db, &s), 0);
	assert_int_equal(s.npids, 2);
	assert_true((s.pids[0] == 70 && s.pids[1] == 71) || (s.pids[0] == 71 && s.pids[1] == 70));
	cw_scope_release(&s);
	assert_null(s.pids);
	/* A filter that matches nothing is an empty answer (-1), not "no
	 * filter". */
	s.ntf = 0;
	assert_int_equal(cw_scope_tenant(&s, "pod", "nope", err, sizeof(err)), 0);
	assert_int_equal(cw_scope_select(st->db, &s), 0);
	assert_int_equal(s.npids, -1);
	cw_scope_release(&s);
	exec(st, "DROP TABLE cgroups");
	assert_true(cw_scope_select(st->db, &s) < 0);
	cw_scope_release(&s);
	cw_store_close(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing_given),   cmocka_unit_test(test_since_with_from_or_to),
		cmocka_unit_test(test_durations),       cmocka_unit_test(test_times),
		cmocka_unit_test(test_to_after_from),   cmocka_unit_test(test_tenant_names),
		cmocka_unit_test(test_window_anchor),   cmocka_unit_test(test_select),
	};
	int rc;

	snprintf(path, sizeof(path), "/tmp/cw-test-scope-%d.db", (int)getpid());
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	remove_store_files(path);
	return rc;
}
