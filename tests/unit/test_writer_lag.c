/* metrics/writer_lag.c: rows pending until the writer's commit count moves,
 * their lag from the event's end to the poll that saw the commit, the age
 * of the oldest pending row, a commit before a row not credited to it, the
 * scrape's own poll, runs of rows, and the rendered families. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "metrics/live_metrics.h"
#include "metrics/writer_lag.h"

#define MS 1000000ULL

static uint64_t commits;
static int poll_rc;

static int poll(void *ctx, uint64_t *out)
{
	(void)ctx;
	*out = commits;
	return poll_rc;
}

static void test_pending_then_commit(void **state)
{
	struct cw_writer_lag *l;
	struct cw_writer_lag_view v;

	(void)state;
	commits = 5;
	poll_rc = 0;
	assert_int_equal(cw_writer_lag_new(&l, poll, NULL), 0);
	/* Two rows whose events ended at 100 ms and 150 ms, handed over at 160 ms. */
	cw_writer_lag_row(l, 100 * MS, 5, 160 * MS);
	cw_writer_lag_row(l, 150 * MS, 5, 160 * MS);
	assert_int_equal(cw_writer_lag_read(l, 300 * MS, &v), 0);
	assert_int_equal(v.pending_rows, 2);
	assert_int_equal(v.oldest_ns, 200 * MS);
	assert_int_equal(v.committed_rows, 0);
	/* The writer commits; the next poll (a scrape at 400 ms) sees it. */
	commits = 6;
	assert_int_equal(cw_writer_lag_read(l, 400 * MS, &v), 0);
	assert_int_equal(v.pending_rows, 0);
	assert_int_equal(v.oldest_ns, 0);
	assert_int_equal(v.committed_rows, 2);
	assert_int_equal(v.sum_ns, 300 * MS + 250 * MS);
	assert_int_equal(v.buckets[cw_prom_bucket(300 * MS)], 1);
	assert_int_equal(v.buckets[cw_prom_bucket(250 * MS)], 1);
	cw_writer_lag_free(l);
}

static void test_commit_before_row_not_credited(void **state)
{
	struct cw_writer_lag *l;
	struct cw_writer_lag_view v;

	(void)state;
	commits = 1;
	assert_int_equal(cw_writer_lag_new(&l, poll, NULL), 0);
	cw_writer_lag_row(l, 10 * MS, 1, 20 * MS);
	/* A commit happened (count 2) before the next row was handed over:
	 * it settles the first row at 50 ms, the new row stays pending. */
	cw_writer_lag_row(l, 45 * MS, 2, 50 * MS);
	commits = 2;
	assert_int_equal(cw_writer_lag_read(l, 60 * MS, &v), 0);
	assert_int_equal(v.committed_rows, 1);
	assert_int_equal(v.sum_ns, 40 * MS);
	assert_int_equal(v.pending_rows, 1);
	assert_int_equal(v.oldest_ns, 15 * MS);
	/* The once-a-second poll sees the next commit. */
	cw_writer_lag_commits(l, 3, 70 * MS);
	assert_int_equal(cw_writer_lag_read(l, 80 * MS, &v), 0);
	assert_int_equal(v.committed_rows, 2);
	assert_int_equal(v.sum_ns, 40 * MS + 25 * MS);
	cw_writer_lag_free(l);
}

static void test_runs_and_failed_poll(void **state)
{
	struct cw_writer_lag *l;
	struct cw_writer_lag_view v;

	(void)state;
	commits = 0;
	assert_int_equal(cw_writer_lag_new(&l, poll, NULL), 0);
	/* 10,000 rows, one every 10 us over 100 ms, then out of order ones. */
	for (uint64_t i = 0; i < 10000; i++)
		cw_writer_lag_row(l, 1000 * MS + i * 10000, 0, 1100 * MS);
	cw_writer_lag_row(l, 900 * MS, 0, 1100 * MS);
	/* The poll fails: nothing moves, the figures of the last read stay. */
	commits = 1;
	poll_rc = -EIO;
	assert_int_equal(cw_writer_lag_read(l, 1200 * MS, &v), -EIO);
	assert_int_equal(v.pending_rows, 10001);
	assert_int_equal(v.oldest_ns, 300 * MS);
	poll_rc = 0;
	assert_int_equal(cw_writer_lag_read(l, 1200 * MS, &v), 0);
	assert_int_equal(v.committed_rows, 10001);
	/* Rows within a millisecond share their run's start: each lag is read
	 * at most 1 ms high, never low. */
	{
		uint64_t exact = 300 * MS;

		for (uint64_t i = 0; i < 10000; i++)
			exact += 200 * MS - i * 10000;
		assert_true(v.sum_ns >= exact && v.sum_ns <= exact + 10000 * MS);
	}
	cw_writer_lag_free(l);
}

static void test_render(void **state)
{
	struct cw_writer_lag *l;
	struct strbuf sb;
	const char *t;

	(void)state;
	commits = 0;
	assert_int_equal(cw_writer_lag_new(&l, poll, NULL), 0);
	cw_writer_lag_row(l, 100 * MS, 0, 100 * MS);
	commits = 1;
	cw_writer_lag_commits(l, 1, 104 * MS); /* 4 ms: bucket le=0.004194304 */
	cw_writer_lag_row(l, 200 * MS, 1, 200 * MS);
	strbuf_init(&sb, 1 << 20);
	assert_int_equal(cw_writer_lag_render(l, "n\"1", 1200 * MS, &sb), 0);
	t = strbuf_str(&sb);
	assert_non_null(strstr(t, "# TYPE causeway_writer_lag_seconds gauge\n"
				  "causeway_writer_lag_seconds{node=\"n\\\"1\"} 1\n"));
	assert_non_null(strstr(t, "causeway_writer_pending_rows{node=\"n\\\"1\"} 1\n"));
	assert_non_null(strstr(t, "causeway_writer_commit_lag_seconds_bucket{node=\"n\\\"1\",le=\"0.002097152\"} 0\n"));
	assert_non_null(strstr(t, "causeway_writer_commit_lag_seconds_bucket{node=\"n\\\"1\",le=\"0.004194304\"} 1\n"));
	assert_non_null(strstr(t, "causeway_writer_commit_lag_seconds_bucket{node=\"n\\\"1\",le=\"+Inf\"} 1\n"));
	assert_non_null(strstr(t, "causeway_writer_commit_lag_seconds_sum{node=\"n\\\"1\"} 0.004\n"));
	assert_non_null(strstr(t, "causeway_writer_commit_lag_seconds_count{node=\"n\\\"1\"} 1\n"));
	strbuf_release(&sb);
	cw_writer_lag_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pending_then_commit),
		cmocka_unit_test(test_commit_before_row_not_credited),
		cmocka_unit_test(test_runs_and_failed_poll),
		cmocka_unit_test(test_render),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
