/* A size cap holds the whole footprint: the database, its WAL and the
 * reserve file beside it stay within 1.1 times the cap under a flood
 * (docs/trace.md "Size cap"). The writer is driven as trace drives it
 * (threaded, immediate, a batch per consumer flush) with a flood of
 * ordinary calls, every flush's rows as many as a 200 ms batch of a fast
 * loop; a thread samples the files' sizes every millisecond, inside
 * transactions too. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/footprint.h"
#include "store/reserve.h"
#include "store/retention.h"
#include "store/store.h"
#include "store/writer.h"
#include "rule_assert.h"

#define CAP (2LL << 20)
#define BATCHES 30
#define ROWS_PER_BATCH 20000

static char path[64];
static volatile int sampling;
static int64_t peak, peak_db, peak_wal;

static int64_t size_of(const char *p)
{
	struct stat s;

	return stat(p, &s) ? 0 : (int64_t)s.st_size;
}

static void *sampler(void *arg)
{
	char wal[80], res[80];
	struct timespec ts = { 0, 1000000 };

	(void)arg;
	snprintf(wal, sizeof(wal), "%s-wal", path);
	snprintf(res, sizeof(res), "%s-reserve", path);
	while (sampling) {
		int64_t d = size_of(path), w = size_of(wal), sum = d + w + size_of(res);

		if (sum > peak)
			peak = sum, peak_db = d, peak_wal = w;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void test_flood_within_cap(void **state)
{
	struct cw_writer_opts wo = { .node = "n", .session_id = 1, .size_cap_bytes = CAP, .immediate = 1,
				     .threaded = 1, .batch_rows = 1 << 30 };
	struct cw_event_row r = { .comm = "python", .source = "cuda", .op = "cudaStreamSynchronize", .pid = 10,
				  .tid = 10, .device = 0, .has_ret = 1, .nargs = 1 };
	struct cw_store_reserve rs;
	struct cw_store *st;
	struct cw_writer *w;
	pthread_t th;
	char err[256];
	uint64_t t = 1000000000ULL;

	(void)state;
	strcpy(path, "/tmp/cw-test-capfoot-XXXXXX");
	close(mkstemp(path));
	unlink(path);
	/* The page size trace gives a store under this cap. */
	assert_int_equal(cw_store_create(&st, path, cw_footprint_page_size(CAP), err, sizeof(err)), 0);
	assert_int_equal(cw_store_reserve_take(&rs, path, CAP), 0);
	assert_int_equal(cw_writer_new(&w, st, &wo), 0);
	sampling = 1;
	assert_int_equal(pthread_create(&th, NULL, sampler, NULL), 0);
	for (int b = 0; b < BATCHES; b++) {
		assert_int_equal(cw_writer_try_begin(w), 0);
		for (int i = 0; i < ROWS_PER_BATCH; i++) {
			r.mono_ns = r.wall_ns = t;
			r.duration_ns = 2000 + (t / 7) % 500;
			r.args[0] = (int64_t)t;
			t += 25000;
			assert_int_equal(cw_writer_event(w, &r), 0);
		}
		assert_int_equal(cw_writer_flush(w), 0);
	}
	assert_int_equal(cw_writer_free(w), 0);
	sampling = 0;
	pthread_join(th, NULL);
	print_message("cap %lld: peak footprint %lld (%.2fx; database %lld, WAL %lld)\n", (long long)CAP,
		      (long long)peak, (double)peak / (double)CAP, (long long)peak_db, (long long)peak_wal);
	assert_true(store_q1(st->db, "SELECT count(*) FROM calls") > 0);
	assert_true(peak <= CAP + CAP / 10);
	cw_store_close(st);
	cw_store_reserve_release(&rs);
	remove_store_files(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flood_within_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
