/* Retention by tiers (store/retention.h): ordinary calls older than the
 * recent window go first; then the off-CPU and kernel-event evidence older
 * than it that overlaps no kept call; then ordinary calls of the window;
 * kept calls (anomalous, failing, NCCL, a process's first call of an op)
 * and the evidence beside them last. Every pruned row is counted. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/retention.h"
#include "store/store.h"
#include "store/writer.h"
#include "rule_assert.h"

#define NCALLS 200000
#define STEP_NS 1000000ULL /* a call every 1 ms: 200 s */
#define T0_NS 1000000000ULL
#define WINDOW_NS (60ULL * 1000000000ULL)
#define WIN_I (NCALLS - (int)(WINDOW_NS / STEP_NS)) /* the first call inside the window */

static char path[64];

static int64_t q1(struct cw_store *st, const char *sql)
{
	return store_q1(st->db, sql);
}

static int is_slow(int i)
{
	return i % 10000 == 5000;
}

/* Not kept by any rule: not slow, failing, NCCL, nor another process's. */
static int ordinary(int64_t i)
{
	return !is_slow((int)i) && i % 10 != 3 && i % 20000 != 100 && i != 50000;
}

/* One worker (pid 10) syncing every 1 ms for 200 s: 1 us calls, a slow
 * one (50 us) every 10 s with a preemption inside it and a block write
 * from another process beside it; one failing call, NCCL calls, a second
 * process making one call; plus ordinary evidence: a blocked interval
 * between calls every second and a block write every 5 s that overlap nothing kept. */
static void fill(struct cw_store *st)
{
	struct cw_writer_opts wo = { .node = "n", .batch_rows = 50000 };
	struct cw_event_row r, io;
	struct cw_offcpu_row o;
	struct cw_writer *w;
	int i;

	assert_int_equal(cw_writer_new(&w, st, &wo), 0);
	memset(&io, 0, sizeof(io));
	io.source = "io";
	io.op = "block_write";
	io.pid = io.tid = 99;
	io.comm = "dd";
	io.device = -1;
	io.duration_ns = 20000;
	for (i = 0; i < NCALLS; i++) {
		uint64_t t = T0_NS + (uint64_t)i * STEP_NS;

		memset(&r, 0, sizeof(r));
		r.mono_ns = r.wall_ns = t;
		r.pid = r.tid = 10;
		r.comm = "train";
		r.source = "cuda";
		r.op = "cudaStreamSynchronize";
		r.has_ret = 1;
		r.device = -1;
		r.nargs = 1;
		r.args[0] = i;
		r.duration_ns = is_slow(i) ? 50000 : 1000;
		if (i % 10 == 3)
			r.ret = 700; /* failing: every tenth call */
		if (i % 20000 == 100) {
			r.source = "nccl";
			r.op = "ncclAllReduce";
		}
		if (i == 50000)
			r.pid = r.tid = 11; /* another process's first (and only) call */
		assert_int_equal(cw_writer_event(w, &r), 0);
		memset(&o, 0, sizeof(o));
		o.pid = o.tid = 10;
		o.comm = "train";
		if (is_slow(i)) {
			o.reason = "preempted";
			o.start_mono_ns = t + 10000;
			o.end_mono_ns = t + 40000;
			o.by_comm = "hog";
			io.mono_ns = io.wall_ns = t + 5000;
			assert_int_equal(cw_writer_event(w, &io), 0);
		} else if (i % 1000 == 500) {
			o.reason = "blocked";
			o.start_mono_ns = t + 200000;
			o.end_mono_ns = t + 300000;
		}
		if (o.reason) {
			o.wall_ns = o.start_mono_ns;
			assert_int_equal(cw_writer_offcpu(w, &o), 0);
		}
		if (i % 1000 == 999) {
			struct cw_snapshot_row sn = { .mono_ns = t, .wall_ns = t };

			assert_int_equal(cw_writer_snapshot(w, &sn), 0);
		}
		if (i % 5000 == 2500) {
			io.mono_ns = io.wall_ns = t + 400000;
			assert_int_equal(cw_writer_event(w, &io), 0);
		}
	}
	assert_int_equal(cw_writer_free(w), 0);
}

/* The rows every tier but the last keeps, and how many of each. */
static const struct {
	const char *sql;
	int64_t n;
} kept_rows[] = {
	{ "SELECT count(*) FROM events WHERE anomalous = 1 AND source = 'cuda'", 20 },
	{ "SELECT count(*) FROM events WHERE ret = 700", NCALLS / 10 },
	{ "SELECT count(*) FROM events WHERE source = 'nccl'", 10 },
	{ "SELECT count(*) FROM events WHERE pid = 11", 1 },
	{ "SELECT count(*) FROM events WHERE pid = 10 AND mono_ns = 1000000000", 1 },
	/* the evidence beside the slow calls */
	{ "SELECT count(*) FROM offcpu WHERE reason = 'preempted'", 20 },
	{ "SELECT count(*) FROM events WHERE source = 'io' AND (mono_ns - 1000000000) % 1000000 = 5000", 20 },
	/* the per-second aggregates of every call, failing or not */
	{ "SELECT sum(count + errors) FROM aggregates WHERE source IN ('cuda', 'nccl')", NCALLS },
	/* the failing calls (ret 700) counted apart from the latencies */
	{ "SELECT sum(errors) FROM aggregates WHERE source = 'cuda'", NCALLS / 10 },
};

static void assert_kept(struct cw_store *st)
{
	for (size_t i = 0; i < sizeof(kept_rows) / sizeof(kept_rows[0]); i++)
		assert_int_equal(q1(st, kept_rows[i].sql), kept_rows[i].n);
}

static int64_t rows(struct cw_store *st)
{
	return q1(st, "SELECT (SELECT count(*) FROM calls) + (SELECT count(*) FROM kevents)");
}

static void test_tiers(void **state)
{
	struct cw_retention_counts c = { 0 }, prev;
	int64_t used, before, off, win_mono = (int64_t)(T0_NS + (uint64_t)(NCALLS - 1) * STEP_NS - WINDOW_NS);
	struct cw_store *st;
	char err[256], sql[256];

	(void)state;
	snprintf(path, sizeof(path), "/tmp/cw-test-tiers-%d.db", (int)getpid());
	remove_store_files(path);
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	fill(st);
	used = cw_store_used_bytes(st);
	before = rows(st);
	off = q1(st, "SELECT count(*) FROM offcpu");
	assert_int_equal(q1(st, "SELECT count(*) FROM events WHERE anomalous = 1 AND source = 'cuda'"), 20);

	/* 1. a fifth less: ordinary calls older than the window are enough */
	assert_int_equal(cw_retention_enforce_tiers(st, used - used / 5, (int64_t)WINDOW_NS, &c), 0);
	assert_true(cw_store_used_bytes(st) <= used - used / 5);
	assert_true(c.ordinary > 0);
	assert_int_equal(c.evidence, 0);
	assert_int_equal(c.recent, 0);
	assert_int_equal(c.kept, 0);
	assert_int_equal(c.events, c.ordinary);
	assert_int_equal(rows(st), before - c.events);
	/* oldest first: the oldest ordinary call left is the one after the
	 * c.ordinary oldest (call 0, the first, is kept) */
	{
		int64_t k = 1, n = 0;

		for (; n < c.ordinary; k++)
			n += ordinary(k);
		while (!ordinary(k))
			k++;
		assert_int_equal(q1(st, "SELECT min(mono_ns) FROM events WHERE source = 'cuda' AND anomalous = 0"
					" AND ret = 0 AND pid = 10 AND mono_ns > 1000000000"),
				 (int64_t)(T0_NS + (uint64_t)k * STEP_NS));
	}
	/* the window (from the newest call back 60 s) keeps every call */
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM events WHERE source IN ('cuda', 'nccl') AND mono_ns >= %lld",
		 (long long)win_mono);
	assert_int_equal(q1(st, sql), NCALLS - WIN_I + 1);
	assert_kept(st);
	assert_int_equal(q1(st, "SELECT count(*) FROM offcpu"), off);

	/* 2. half of what is left: every old ordinary call goes, then the
	 * evidence no kept call needs, then the window shrinks */
	prev = c;
	used = cw_store_used_bytes(st);
	before = rows(st);
	assert_int_equal(cw_retention_enforce_tiers(st, used / 2, (int64_t)WINDOW_NS, &c), 0);
	assert_true(cw_store_used_bytes(st) <= used / 2);
	assert_true(c.ordinary > prev.ordinary);
	assert_true(c.evidence > 0);
	assert_true(c.recent > 0);
	assert_int_equal(c.kept, 0);
	assert_int_equal(rows(st), before - (c.events - prev.events));
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM offcpu WHERE reason = 'blocked' AND end_mono_ns < %lld",
		 (long long)win_mono);
	assert_int_equal(q1(st, sql), 0);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM events WHERE source = 'io' AND mono_ns < %lld"
				   " AND (mono_ns - 1000000000) %% 1000000 = 400000",
		 (long long)win_mono);
	assert_int_equal(q1(st, sql), 0);
	/* the evidence tier counts intervals and kernel events alike */
	assert_int_equal(c.evidence, off - q1(st, "SELECT count(*) FROM offcpu") +
					     (c.events - prev.events) - (c.ordinary - prev.ordinary) - c.recent);
	/* the newest calls of the window are still all there */
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM events WHERE source = 'cuda' AND mono_ns > %lld",
		 (long long)(T0_NS + (uint64_t)(NCALLS - 2000) * STEP_NS));
	assert_int_equal(q1(st, sql), 1999);
	assert_kept(st);

	/* 3. caps that only kept rows can meet, lowered until the kept tier
	 * runs: the oldest failing calls go first (what is left of them is
	 * the newest, every one) */
	{
		int64_t cap = cw_store_used_bytes(st), left, oldest, k;

		prev = c;
		while (c.kept == prev.kept && cap > 65536) {
			cap -= 32768;
			assert_int_equal(cw_retention_enforce_tiers(st, cap, (int64_t)WINDOW_NS, &c), 0);
		}
		assert_true(c.kept > prev.kept);
		left = q1(st, "SELECT count(*) FROM events WHERE ret = 700");
		assert_true(left > 0 && left < NCALLS / 10);
		oldest = q1(st, "SELECT min(mono_ns) FROM events WHERE ret = 700");
		k = (oldest - (int64_t)T0_NS) / (int64_t)STEP_NS;
		assert_int_equal(k % 10, 3);
		assert_int_equal(left, (NCALLS - k + 6) / 10);
	}
	/* 4. a cap nothing can meet: kept rows go too, and the context older
	 * than what is left, then the chains (last); the aggregates never go */
	prev = c;
	before = rows(st);
	assert_int_equal(sqlite3_exec(st->db, "INSERT INTO chains (node, created_wall_ns, severity, kind, op, summary, json)"
					      " VALUES ('n', 1, 'HIGH', 'cpu_preemption', 'cudaStreamSynchronize', 's', '{}')",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(cw_retention_enforce_tiers(st, 1, (int64_t)WINDOW_NS, &c), 0);
	assert_true(c.kept > prev.kept);
	assert_true(c.context > prev.context);
	assert_int_equal(c.events - prev.events, before - rows(st));
	assert_true(q1(st, "SELECT count(*) FROM snapshots") < NCALLS / 1000);
	assert_int_equal(q1(st, "SELECT count(*) FROM snapshots WHERE mono_ns <"
				" coalesce((SELECT min(mono_ns) FROM events), 9223372036854775807)"), 0);
	assert_int_equal(q1(st, "SELECT count(*) FROM offcpu WHERE end_mono_ns <"
				" coalesce((SELECT min(mono_ns) FROM events), 9223372036854775807)"), 0);
	assert_int_equal(q1(st, "SELECT count(*) FROM chains"), 0);
	assert_int_equal(c.chains - prev.chains, 1);
	assert_int_equal(q1(st, "SELECT sum(count + errors) FROM aggregates WHERE source IN ('cuda', 'nccl')"), NCALLS);
	cw_store_close(st);
	remove_store_files(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tiers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
