/* Stats under the causal engine: overlap and union arithmetic,
 * dispersion, and percentiles merged from per-second aggregates. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/hist.h"
#include "analysis/stats.h"
#include "store/store.h"

static void test_overlap(void **state)
{
	(void)state;
	assert_int_equal(cw_overlap(0, 10, 5, 20), 5);
	assert_int_equal(cw_overlap(5, 20, 0, 10), 5);
	assert_int_equal(cw_overlap(0, 10, 10, 20), 0); /* half-open: touching is no overlap */
	assert_int_equal(cw_overlap(0, 10, 2, 3), 1);
	assert_int_equal(cw_overlap(0, 10, 20, 30), 0);
	assert_int_equal(cw_overlap(10, 5, 0, 100), 0); /* empty interval */
}

static void test_union_and_cover(void **state)
{
	struct cw_interval v[] = {{50, 60}, {0, 10}, {5, 20}, {20, 25}, {70, 70}, {40, 45}};
	size_t n;

	(void)state;
	n = cw_intervals_union(v, 6);
	assert_int_equal(n, 3);
	assert_int_equal(v[0].start, 0);
	assert_int_equal(v[0].end, 25); /* overlapping and touching merged */
	assert_int_equal(v[1].start, 40);
	assert_int_equal(v[2].end, 60);
	assert_int_equal(cw_intervals_cover(v, n, 0, 100), 25 + 5 + 10);
	assert_int_equal(cw_intervals_cover(v, n, 22, 42), 3 + 2);
	assert_int_equal(cw_intervals_cover(v, n, 26, 39), 0);
	assert_int_equal(cw_intervals_cover(v, n, 55, 55), 0);
	assert_int_equal(cw_intervals_cover(v, 0, 0, 100), 0);
	assert_int_equal(cw_intervals_union(v, 0), 0);
}

static void test_cv_and_median(void **state)
{
	double even[] = {2, 2, 2, 2};
	double spread[] = {1, 3};
	double m[] = {5, 1, 4, 2, 3};
	double m2[] = {4, 1, 3, 2};

	(void)state;
	assert_true(fabs(cw_cv(even, 4)) < 1e-12);
	assert_true(fabs(cw_cv(spread, 2) - 0.5) < 1e-12);
	assert_true(cw_cv(spread, 1) < 0);
	assert_true(fabs(cw_median(m, 5) - 3) < 1e-12);
	assert_true(fabs(cw_median(m2, 4) - 2.5) < 1e-12);
	assert_true(cw_median(m, 0) == 0);
}

/* Writes seconds of a uniform 1..1000 us series into aggregates as the
 * writer would, then checks the merged quantiles. */
static void put_second(sqlite3 *db, const char *op, int64_t sec, uint64_t lo_us, uint64_t hi_us)
{
	struct cw_hist h;
	uint8_t buf[CW_HIST_ENCODED_MAX];
	sqlite3_stmt *st;
	int len;

	cw_hist_reset(&h);
	for (uint64_t us = lo_us; us <= hi_us; us++)
		cw_hist_add(&h, us * 1000);
	len = cw_hist_encode(&h, buf, sizeof(buf));
	assert_true(len > 0);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "INSERT INTO aggregates (node, source, op, second, count, sum_ns, max_ns, hist)"
					    " VALUES ('n1', 'cuda', ?1, ?2, ?3, ?4, ?5, ?6)",
					    -1, &st, NULL),
			 SQLITE_OK);
	sqlite3_bind_text(st, 1, op, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, sec);
	sqlite3_bind_int64(st, 3, (int64_t)h.count);
	sqlite3_bind_int64(st, 4, (int64_t)h.sum_ns);
	sqlite3_bind_int64(st, 5, (int64_t)h.max_ns);
	sqlite3_bind_blob(st, 6, buf, len, SQLITE_TRANSIENT);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
}

static void test_opstats_from_aggregates(void **state)
{
	struct cw_store *st;
	struct cw_opstat *ops;
	char path[64], err[256];
	int fd, n;

	(void)state;
	strcpy(path, "/tmp/cw-test-stats-XXXXXX");
	fd = mkstemp(path);
	close(fd);
	unlink(path);
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	/* Two seconds that together hold 1..1000 us once each. */
	put_second(st->db, "cudaMalloc", 100, 1, 500);
	put_second(st->db, "cudaMalloc", 101, 501, 1000);
	put_second(st->db, "cudaMalloc", 102, 5000, 5000); /* outside the window below */
	put_second(st->db, "cudaFree", 100, 10, 10);

	n = cw_opstats_load(st->db, NULL, 100, 101, &ops);
	assert_int_equal(n, 2);
	/* ordered by node, source, op */
	assert_string_equal(ops[0].op, "cudaFree");
	assert_string_equal(ops[1].op, "cudaMalloc");
	assert_int_equal(ops[1].count, 1000);
	assert_int_equal(ops[1].nsecs, 2);
	assert_int_equal(ops[1].max_ns, 1000000);
	/* log-linear buckets: within ~6.25 % of the true value */
	assert_true(llabs((long long)ops[1].p50_ns - 500000) <= 32000);
	assert_true(llabs((long long)ops[1].p99_ns - 990000) <= 62000);
	assert_int_equal(cw_opstat_calls_through(&ops[1], 100), 500);
	assert_int_equal(cw_opstat_calls_through(&ops[1], 99), 0);
	cw_opstats_free(ops, (size_t)n);

	n = cw_opstats_load(st->db, "other-node", 0, 1000, &ops);
	assert_int_equal(n, 0);
	cw_opstats_free(ops, 0);

	n = cw_opstats_load(st->db, "n1", 0, 1000, &ops);
	assert_int_equal(n, 2);
	assert_int_equal(ops[1].count, 1001);
	assert_int_equal(ops[1].max_ns, 5000000000ULL / 1000);
	cw_opstats_free(ops, (size_t)n);

	/* A corrupt histogram is an error, not a silent zero. */
	assert_int_equal(cw_exec(st->db, "UPDATE aggregates SET hist = x'ff' WHERE op = 'cudaFree'"), 0);
	assert_true(cw_opstats_load(st->db, NULL, 0, 1000, &ops) < 0);
	cw_store_close(st);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_union_and_cover),
		cmocka_unit_test(test_cv_and_median),
		cmocka_unit_test(test_opstats_from_aggregates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
