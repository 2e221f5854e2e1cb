/* trace's live NCCL hang warning (trace/nccl_live.c): thresholds from
 * both sides, failed calls, ranks from ncclCommInitRank. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "trace/nccl_live.h"

#define MS 1000000ULL
#define S (1000 * MS)

static void row(struct cw_nccl_live *l, uint32_t pid, const char *op, uint64_t wall, int64_t ret, int64_t a2)
{
	struct cw_event_row r;

	memset(&r, 0, sizeof(r));
	r.pid = r.tid = pid;
	r.source = "nccl";
	r.op = op;
	r.wall_ns = wall;
	r.has_ret = 1;
	r.ret = ret;
	r.args[2] = a2;
	cw_nccl_live_observe(l, &r);
}

/* 4 ranks, 10 collectives 100 ms apart; rank 3 misses the 10th. */
static void job(struct cw_nccl_live *l)
{
	memset(l, 0, sizeof(*l));
	for (uint32_t p = 0; p < 4; p++)
		row(l, 100 + p, "ncclCommInitRank", 0, 0, p);
	for (int k = 0; k < 10; k++)
		for (uint32_t p = 0; p < 4; p++)
			if (!(k == 9 && p == 3))
				row(l, 100 + p, "ncclAllReduce", S + (uint64_t)k * 100 * MS + p * MS, 0, 0);
}

static void test_threshold(void **state)
{
	static struct cw_nccl_live l;
	char buf[256];
	uint64_t since = S + 9 * 100 * MS; /* rank 0 entered #10 */

	(void)state;
	job(&l);
	assert_int_equal(cw_nccl_live_hang(&l, since + 10 * S - 1, 0, buf, sizeof(buf)), 0);
	assert_int_equal(cw_nccl_live_hang(&l, since + 10 * S, 0, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "NCCL hang: collective #10 entered by 3 of 4 processes 10.00s ago; behind:"
				 " rank 3 (pid 103, at #9)");
	/* A lower floor: 20 steps of 100 ms rule. */
	assert_int_equal(cw_nccl_live_hang(&l, since + 2 * S - 10 * MS, 1, buf, sizeof(buf)), 0);
	assert_int_equal(cw_nccl_live_hang(&l, since + 2 * S + 10 * MS, 1, buf, sizeof(buf)), 1);
}

static void test_no_hang(void **state)
{
	static struct cw_nccl_live l;
	char buf[256];

	(void)state;
	job(&l);
	/* Rank 3's collective fails: it entered nothing, still behind. */
	row(&l, 103, "ncclAllReduce", S + 950 * MS, 5, 0);
	assert_int_equal(cw_nccl_live_hang(&l, S + 60 * S, 0, buf, sizeof(buf)), 1);
	/* It arrives: everyone at #10. */
	row(&l, 103, "ncclAllReduce", S + 960 * MS, 0, 0);
	assert_int_equal(cw_nccl_live_hang(&l, S + 60 * S, 0, buf, sizeof(buf)), 0);
	/* Other sources are not collectives. */
	memset(&l, 0, sizeof(l));
	struct cw_event_row r = { .pid = 1, .source = "cuda", .op = "ncclAllReduce", .has_ret = 1 };
	cw_nccl_live_observe(&l, &r);
	assert_int_equal(l.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threshold),
		cmocka_unit_test(test_no_hang),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
