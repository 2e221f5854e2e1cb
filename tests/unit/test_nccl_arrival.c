/* NCCL arrival analysis (analysis/nccl_arrival.c) on hand-built calls,
 * every threshold from both sides, and the pipeline's NCCL tracking
 * (pipeline/nccl_track.c): sequence numbers, bytes, communicator ids. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "analysis/nccl_arrival.h"
#include "bpf/events.h"
#include "pipeline/nccl_track.h"
#include "pipeline/ops.h"
#include "pipeline/pipeline.h"
#include "store/store.h"
#include "store/writer.h"

#define MS 1000000LL
#define S (1000 * MS)

struct job {
	struct cw_nccl_call c[4096];
	size_t n;
	struct cw_nccl_rank r[8];
	int nr;
	struct cw_nccl_arrival a;
};

static void ranks(struct job *j, int n)
{
	memset(j, 0, sizeof(*j));
	j->nr = n;
	for (int i = 0; i < n; i++) {
		snprintf(j->r[i].node, sizeof(j->r[i].node), "n%d", i);
		j->r[i].pid = 100 + i;
		j->r[i].tid = 100 + i;
		j->r[i].rank = i;
		j->r[i].nranks = n;
	}
}

/* Collective seq of every rank: entry = base + late[rank], completion
 * when the last has arrived plus transfer. */
static void group(struct job *j, int64_t comm, int64_t seq, int64_t base, const int64_t *late, int64_t transfer,
		  int skip)
{
	int64_t last = 0;

	for (int i = 0; i < j->nr; i++)
		if (i != skip && base + late[i] > last)
			last = base + late[i];
	for (int i = 0; i < j->nr; i++) {
		if (i == skip)
			continue;
		j->c[j->n++] = (struct cw_nccl_call){
			.comm_id = comm, .seq = seq, .entry = base + late[i], .entry_mono = base + late[i],
			.done = last + transfer, .bytes = 4 << 20, .rank_idx = i, .op = CW_OP_ncclAllReduce,
		};
	}
}

static int analyse(struct job *j, int64_t until, uint64_t hang_min)
{
	return cw_nccl_arrival_analyse(j->c, j->n, j->r, j->nr, until, hang_min, &j->a);
}

/* n groups, rank `who` late by lag in the first `late_n` of them. */
static void straggle(struct job *j, int nr, int n, int who, int64_t lag, int late_n)
{
	ranks(j, nr);
	for (int s = 0; s < n; s++) {
		int64_t late[8] = { 0, 10000, 20000, 30000, 0, 0, 0, 0 }; /* 10 us of jitter */

		if (s < late_n)
			late[who] += lag;
		group(j, 1, s + 1, (int64_t)s * 100 * MS, late, 2 * MS, -1);
	}
}

static void test_straggler_found(void **state)
{
	struct job *j = calloc(1, sizeof(*j));

	(void)state;
	straggle(j, 4, 20, 1, 5 * MS, 20);
	assert_int_equal(analyse(j, 0, 0), 0);
	assert_int_equal(j->a.straggler, 1);
	assert_int_equal(j->a.complete, 20);
	assert_int_equal(j->r[1].late, 20);
	/* Lag is measured against the next-latest rank (rank 3, +30 us). */
	assert_int_equal(j->r[1].lag_ns, 20 * (5 * MS + 10000 - 30000));
	assert_int_equal(j->a.nlate, 20);
	/* Every other rank waited for it. */
	assert_true(j->r[0].waited_ns == 20 * (uint64_t)(5 * MS + 10000));
	assert_int_equal(j->a.hang, 0);
	free(j);
}

static void test_straggler_mean_lag_threshold(void **state)
{
	struct job *j = calloc(1, sizeof(*j));

	(void)state;
	/* Mean lag just under and just over CW_NCCL_MIN_MEAN_LAG_NS (the
	 * lag counts from the next-latest rank, 20 us behind rank 1's +10). */
	straggle(j, 4, 20, 2, (int64_t)CW_NCCL_MIN_MEAN_LAG_NS + 10000 - 1000, 20);
	assert_int_equal(analyse(j, 0, 0), 0);
	assert_int_equal(j->a.straggler, -1);
	straggle(j, 4, 20, 2, (int64_t)CW_NCCL_MIN_MEAN_LAG_NS + 10000 + 1000, 20);
	assert_int_equal(analyse(j, 0, 0), 0);
	assert_int_equal(j->a.straggler, 2);
	free(j);
}

static void test_straggler_min_late(void **state)
{
	struct job *j = calloc(1, sizeof(*j));

	(void)state;
	straggle(j, 4, 20, 0, 10 * MS, CW_NCCL_MIN_LATE - 1);
	assert_int_equal(analyse(j, 0, 0), 0);
	assert_int_equal(j->a.straggler, -1);
	straggle(j, 4, 20, 0, 10 * MS, CW_NCCL_MIN_LATE);
	assert_int_equal(analyse(j, 0, 0), 0);
	assert_int_equal(j->a.straggler, 0);
	free(j);
}

static void test_straggler_share(void **state)
{
	struct job *j = calloc(1, sizeof(*j));

	(void)state;
	/* Two ranks late in turn: neither holds 60 % of the lag. */
	ranks(j, 4);
	for (int s = 0; s < 20; s++) {
		int64_t late[4] = { 0, 0, 0, 0 };

		late[s % 2 ? 1 : 2] = 5 * MS;
		group(j, 1, s + 1, s * 100 * MS, late, 2 * MS, -1);
	}
	assert_int_equal(analyse(j, 0, 0), 0);
	assert_int_equal(j->a.straggler, -1);
	/* 13 of 20 (65 %) to one of them: a straggler. */
	ranks(j, 4);
	for (int s = 0; s < 20; s++) {
		int64_t late[4] = { 0, 0, 0, 0 };

		late[s < 13 ? 1 : 2] = 5 * MS;
		group(j, 1, s + 1, s * 100 * MS, late, 2 * MS, -1);
	}
	assert_int_equal(analyse(j, 0, 0), 0);
	assert_int_equal(j->a.straggler, 1);
	free(j);
}

static void test_min_lag_counts(void **state)
{
	struct job *j = calloc(1, sizeof(*j));

	(void)state;
	ranks(j, 2);
	for (int s = 0; s < 5; s++) {
		int64_t late[2] = { 0, s < 3 ? (int64_t)CW_NCCL_MIN_LAG_NS - 1 : (int64_t)CW_NCCL_MIN_LAG_NS };

		group(j, 1, s + 1, s * 100 * MS, late, MS, -1);
	}
	assert_int_equal(analyse(j, 0, 0), 0);
	assert_int_equal(j->r[1].late, 2);
	free(j);
}

/* Rank 3 never enters collective 11; the step is 100 ms, so the
 * threshold is max(20 x 100 ms, floor). */
static void hang_job(struct job *j)
{
	int64_t late[4] = { 0, 0, 0, 0 };

	ranks(j, 4);
	for (int s = 0; s < 10; s++)
		group(j, 1, s + 1, s * 100 * MS, late, MS, -1);
	group(j, 1, 11, 10 * 100 * MS, late, MS, 3);
	for (size_t i = j->n - 3; i < j->n; i++)
		j->c[i].done = INT64_MIN; /* never completed */
}

static void test_hang_threshold(void **state)
{
	struct job *j = calloc(1, sizeof(*j));
	int64_t start = 10 * 100 * MS;

	(void)state;
	hang_job(j);
	assert_int_equal(analyse(j, start + 10 * S - 1, 0), 0);
	assert_int_equal(j->a.hang, 0);
	assert_int_equal(j->a.hang_threshold_ns, CW_NCCL_HANG_MIN_NS);
	hang_job(j);
	assert_int_equal(analyse(j, start + 10 * S, 0), 0);
	assert_int_equal(j->a.hang, 1);
	assert_int_equal(j->a.hang_seq, 11);
	assert_int_equal(j->a.nmissing, 1);
	assert_int_equal(j->a.missing[0], 3);
	assert_int_equal(j->a.median_step_ns, 100 * MS);
	/* A lower floor: 20 steps (2 s) rule. */
	hang_job(j);
	assert_int_equal(analyse(j, start + 2 * S - 1, 1), 0);
	assert_int_equal(j->a.hang, 0);
	hang_job(j);
	assert_int_equal(analyse(j, start + 2 * S, 1), 0);
	assert_int_equal(j->a.hang, 1);
	assert_int_equal(j->a.hang_threshold_ns, 2 * S);
	free(j);
}

static void test_comm_share_and_busbw(void **state)
{
	struct job *j = calloc(1, sizeof(*j));

	(void)state;
	ranks(j, 4);
	for (int s = 0; s < 20; s++) {
		int64_t late[4] = { 0, 0, 0, 0 };

		group(j, 1, s + 1, s * 100 * MS, late, 60 * MS, -1);
	}
	assert_int_equal(analyse(j, 0, 0), 0);
	assert_int_equal(j->a.straggler, -1);
	/* 20 x 60 ms of waiting over a 19-step span. */
	assert_true(j->a.comm_share > 0.63 && j->a.comm_share < 0.64);
	assert_int_equal(j->a.transfer_p50_ns, 60 * MS);
	assert_int_equal(j->a.bytes_p50, 4 << 20);
	/* allreduce: 2 (n - 1) / n x 4 MiB / 60 ms */
	assert_true(j->a.busbw_gbps > 1.5 * 4194304 / 60e6 - 1e-6 && j->a.busbw_gbps < 1.5 * 4194304 / 60e6 + 1e-6);
	assert_true(cw_nccl_busbw_factor(CW_OP_ncclAllGather, 8) == 7.0 / 8);
	assert_int_equal(cw_nccl_total_bytes(CW_OP_ncclAllGather, 100, 8), 800);
	assert_int_equal(cw_nccl_total_bytes(CW_OP_ncclAllReduce, 100, 8), 100);
	free(j);
}

static void test_many_collectives(void **state)
{
	struct job *j = calloc(1, sizeof(*j));

	(void)state;
	/* More collectives per rank than a byte counts: every one complete,
	 * whatever order the calls come in (the counting sort). */
	straggle(j, 4, 1000, 2, 5 * MS, 1000);
	for (size_t i = j->n - 1; i > 0; i--) {
		size_t k = (i * 2654435761u) % (i + 1);
		struct cw_nccl_call t = j->c[i];
		j->c[i] = j->c[k];
		j->c[k] = t;
	}
	assert_int_equal(analyse(j, 0, 0), 0);
	assert_int_equal(j->a.complete, 1000);
	assert_int_equal(j->a.straggler, 2);
	assert_int_equal(j->r[2].late, 1000);
	for (size_t i = 1; i < j->n; i++)
		assert_true(j->c[i - 1].seq < j->c[i].seq ||
			    (j->c[i - 1].seq == j->c[i].seq && j->c[i - 1].entry <= j->c[i].entry));
	/* Sparse sequence numbers take the general sort: same answer. */
	straggle(j, 4, 50, 1, 5 * MS, 50);
	for (size_t i = 0; i < j->n; i++)
		j->c[i].seq *= 1000;
	for (size_t i = j->n - 1; i > 0; i--) {
		size_t k = (i * 40503u) % (i + 1);
		struct cw_nccl_call t = j->c[i];
		j->c[i] = j->c[k];
		j->c[k] = t;
	}
	assert_int_equal(analyse(j, 0, 0), 0);
	assert_int_equal(j->a.complete, 50);
	assert_int_equal(j->a.straggler, 1);
	free(j);
}

static void test_communicators_apart(void **state)
{
	struct job *j = calloc(1, sizeof(*j));

	(void)state;
	/* The same sequence numbers on two communicators are two
	 * collectives each: 2 x 10 groups, all complete. */
	ranks(j, 2);
	for (int s = 0; s < 10; s++) {
		int64_t late[2] = { 0, 0 };

		group(j, 1, s + 1, s * 100 * MS, late, MS, -1);
		group(j, 2, s + 1, s * 100 * MS + 50 * MS, late, MS, -1);
	}
	assert_int_equal(analyse(j, 0, 0), 0);
	assert_int_equal(j->a.groups, 20);
	assert_int_equal(j->a.complete, 20);
	free(j);
}

/* ---- pipeline tracking ---- */

static struct cw_call mkcall(unsigned op, uint32_t tid, uint64_t ts, uint64_t dur, const uint64_t a[6], int64_t ret)
{
	struct cw_call c;

	memset(&c, 0, sizeof(c));
	c.e.hdr.type = CW_REC_CALL;
	c.e.hdr.size = sizeof(c);
	c.e.hdr.version = CW_EVENTS_VERSION;
	c.e.hdr.source = (uint8_t)cw_op_source(op);
	c.e.hdr.op = (uint16_t)op;
	c.e.hdr.ts_ns = ts;
	c.e.hdr.pid = 77;
	c.e.hdr.tid = tid;
	strcpy(c.e.hdr.comm, "python");
	memcpy(c.e.args, a, 6 * sizeof(a[0]));
	c.end_ns = ts + dur;
	c.retval = ret;
	return c;
}

static int64_t q1(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v = -999;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static void test_track(void **state)
{
	char path[64] = "/tmp/cw-test-nccl-XXXXXX", err[256];
	struct cw_writer_opts wo = { .node = "n1", .session_id = 1 };
	struct cw_pipeline_opts po = { 0 };
	struct cw_store *st;
	struct cw_writer *w;
	struct cw_pipeline *p;
	const uint64_t na = (uint64_t)-1;
	uint64_t init[6] = { 4, 0xabcdef, 2, 0x7000, 0, 0xc0 };
	uint64_t ar[6] = { 1000, 7, 0, 0xc0, 0x55, na };
	uint64_t bad[6] = { 1000, 7, 0, 0xc0, 0x55, na };
	uint64_t send[6] = { 10, 4, 3, 0xc0, 0x55, na };
	uint64_t split[6] = { 5, 0, na, 0xc0, 0x7008, 0xc8 };
	uint64_t sync[6] = { 0x55, 0, 0, 0, 0, 0 };
	struct cw_call c;
	int fd = mkstemp(path);

	(void)state;
	close(fd);
	unlink(path);
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_writer_new(&w, st, &wo), 0);
	po.writer = w;
	po.mono_to_wall_ns = 1000;
	assert_int_equal(cw_pipeline_new(&p, &po), 0);
	c = mkcall(CW_OP_ncclCommInitRank, 77, 100, 10, init, 0);
	assert_int_equal(cw_pipeline_feed(p, &c, sizeof(c)), 0);
	for (int k = 0; k < 3; k++) {
		c = mkcall(CW_OP_ncclAllReduce, 77, 1000 + 100 * (uint64_t)k, 5, ar, 0);
		assert_int_equal(cw_pipeline_feed(p, &c, sizeof(c)), 0);
		/* A failed call between: stored, entered nothing. */
		c = mkcall(CW_OP_ncclAllReduce, 77, 1010 + 100 * (uint64_t)k, 5, bad, 4);
		assert_int_equal(cw_pipeline_feed(p, &c, sizeof(c)), 0);
		c = mkcall(CW_OP_cudaStreamSynchronize, 77, 1020 + 100 * (uint64_t)k, 50, sync, 0);
		assert_int_equal(cw_pipeline_feed(p, &c, sizeof(c)), 0);
	}
	c = mkcall(CW_OP_ncclSend, 77, 2000, 5, send, 0);
	assert_int_equal(cw_pipeline_feed(p, &c, sizeof(c)), 0);
	c = mkcall(CW_OP_ncclSend, 77, 2010, 5, send, 0);
	assert_int_equal(cw_pipeline_feed(p, &c, sizeof(c)), 0);
	c = mkcall(CW_OP_ncclCommSplit, 77, 3000, 5, split, 0);
	assert_int_equal(cw_pipeline_feed(p, &c, sizeof(c)), 0);
	cw_pipeline_free(p);
	assert_int_equal(cw_writer_free(w), 0);
	/* Collectives numbered 1..3 on the communicator the init created,
	 * with its id, rank and size; the failed calls do not advance it. */
	assert_int_equal(q1(st->db, "SELECT group_concat(seq) FROM (SELECT seq FROM nccl_calls"
				    " WHERE op = 'ncclAllReduce' AND ret = 0 ORDER BY id)") != -999, 1);
	assert_int_equal(q1(st->db, "SELECT count(*) FROM nccl_calls WHERE op = 'ncclAllReduce' AND ret = 0"), 3);
	assert_int_equal(q1(st->db, "SELECT max(seq) FROM nccl_calls WHERE op = 'ncclAllReduce' AND ret = 0"), 3);
	assert_int_equal(q1(st->db, "SELECT sum(seq) FROM nccl_calls WHERE op = 'ncclAllReduce' AND ret = 4"), 2 + 3 + 4);
	assert_int_equal(q1(st->db, "SELECT count(*) FROM nccl_calls WHERE op = 'ncclAllReduce' AND comm_id = 11259375"
				    " AND rank = 2 AND nranks = 4 AND bytes = 4000 AND stream = 85 AND redop = 0"), 6);
	/* Completion: the end of the synchronize after it. */
	assert_int_equal(q1(st->db, "SELECT done_wall_ns FROM nccl_calls WHERE seq = 1 AND ret = 0"), 1000 + 1020 + 50);
	assert_int_equal(q1(st->db, "SELECT wait_ns FROM nccl_calls WHERE seq = 2 AND ret = 0"), 50);
	/* p2p: per peer; bytes of ncclInt64. */
	assert_int_equal(q1(st->db, "SELECT group_concat(seq, ',') = '1,2' FROM nccl_calls WHERE op = 'ncclSend'"
				    " AND peer = 3 AND bytes = 80"), 1);
	/* The events row carries the bytes too. */
	assert_int_equal(q1(st->db, "SELECT count(*) FROM events WHERE op = 'ncclAllReduce' AND bytes = 4000"), 6);
	/* Communicators: the init's and the split's (id from the parent's). */
	assert_int_equal(q1(st->db, "SELECT comm_id FROM nccl_comms WHERE comm = 192"), 0xabcdef);
	assert_int_equal(q1(st->db, "SELECT comm_id FROM nccl_comms WHERE comm = 200"),
			 (int64_t)cw_nccl_split_id(0xabcdef, 0, 5));
	assert_int_equal(q1(st->db, "SELECT parent_id FROM nccl_comms WHERE comm = 200"), 0xabcdef);
	assert_int_equal(q1(st->db, "SELECT rank FROM processes WHERE pid = 77"), 2);
	cw_store_close(st);
	unlink(path);
}

static void test_bytes(void **state)
{
	(void)state;
	assert_int_equal(cw_nccl_call_bytes(CW_OP_ncclAllReduce, 10, 7), 40);
	assert_int_equal(cw_nccl_call_bytes(CW_OP_ncclAllGather, 10, 9), 20); /* bf16 */
	assert_int_equal(cw_nccl_call_bytes(CW_OP_ncclAllReduce, 10, 12), -1); /* unknown type */
	assert_int_equal(cw_nccl_call_bytes(CW_OP_ncclCommDestroy, 10, 7), -1);
	assert_int_equal(cw_nccl_call_bytes(CW_OP_ncclSend, -1, 7), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_straggler_found),	   cmocka_unit_test(test_straggler_mean_lag_threshold),
		cmocka_unit_test(test_straggler_min_late), cmocka_unit_test(test_straggler_share),
		cmocka_unit_test(test_min_lag_counts),	   cmocka_unit_test(test_hang_threshold),
		cmocka_unit_test(test_comm_share_and_busbw), cmocka_unit_test(test_communicators_apart),
		cmocka_unit_test(test_many_collectives),
		cmocka_unit_test(test_track),		   cmocka_unit_test(test_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
