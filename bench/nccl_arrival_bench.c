/* nccl_arrival_bench: the NCCL arrival analysis on a large store.
 *   usage: nccl_arrival_bench PATH [CALLS] [RANKS] [REPS]
 * Builds PATH (replaced) with CALLS nccl_calls rows (default 1,000,000:
 * CALLS / RANKS collectives of RANKS ranks, default 8, on one
 * communicator, two nodes of RANKS / 2 ranks each, the second's clock
 * 250 ms ahead and recorded as merge would in meta 'merge.skew'), rank 3
 * late by 5 ms in every 10th collective and preempted meanwhile (one
 * off-CPU row each), then times, REPS times (default 5):
 *   - load: reading the window's collectives from nccl_calls (SQL);
 *   - analyse: cw_nccl_arrival_analyse on them (sort, group, straggler,
 *     hang, communication share);
 *   - explain: the whole explain run (every rule, the NCCL chains with the
 *     straggler's lag decomposition), as `causeway explain` does it;
 * and prints the medians, checking the straggler is found. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/explain.h"
#include "analysis/nccl_arrival.h"
#include "store/store.h"
#include "store/writer.h"
#include "util/timeutil.h"

#define MS 1000000LL

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int build(const char *path, long calls, int nranks)
{
	const int64_t t0 = 1767225600LL * 1000000000LL, step = 100 * MS, skew = 250 * MS;
	long groups = calls / nranks;
	struct cw_store *st;
	char err[512], wal[600];
	int rc = 0;

	unlink(path);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	unlink(wal);
	if (cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err))) {
		fprintf(stderr, "nccl_arrival_bench: %s\n", err);
		return 1;
	}
	/* One node at a time: a writer holds the connection's transaction. */
	for (int n = 0; n < 2; n++) {
		struct cw_writer *w;
		char node[16];
		int64_t sid;

		snprintf(node, sizeof(node), "node%d", n + 1);
		struct cw_session_info si = { .node = node, .kind = "bench", .started_wall_ns = (uint64_t)t0,
					      .mono_to_wall_ns = t0 + (n ? skew : 0), .rank = -1, .local_rank = -1 };
		struct cw_writer_opts wo = { .node = node };
		if (cw_session_begin(st, &si, &sid))
			return 1;
		wo.session_id = sid;
		if (cw_writer_new(&w, st, &wo))
			return 1;
		for (long g = 0; g < groups; g++) {
			int64_t base = g * step, last = 0, late3 = g % 10 == 0 ? 5 * MS : 0;

			for (int r = 0; r < nranks; r++) {
				int64_t e = base + 30 * MS + r * 1000 + (r == 3 ? late3 : 0);
				if (e > last)
					last = e;
			}
			for (int r = n * nranks / 2; r < (n + 1) * nranks / 2; r++) {
				int64_t e = base + 30 * MS + r * 1000 + (r == 3 ? late3 : 0);
				struct cw_nccl_call_row row = {
					.pid = (uint32_t)(1000 + r), .tid = (uint32_t)(1000 + r), .comm = 0xc0,
					.comm_id = 0x77aa, .rank = r, .nranks = nranks, .seq = g + 1, .op = "ncclAllReduce",
					.count = 1 << 20, .datatype = 7, .bytes = 4 << 20, .redop = 0, .peer = CW_NCCL_NONE,
					.stream = 0x99, .wall_ns = (uint64_t)(t0 + e + (n ? skew : 0)), .mono_ns = (uint64_t)e,
					.duration_ns = 30000, .ret = 0, .done_wall_ns = t0 + last + 2 * MS + (n ? skew : 0),
					.wait_ns = last + 2 * MS - e,
				};
				rc |= cw_writer_nccl_call(w, &row);
				if (r == 3 && late3) {
					struct cw_offcpu_row o = {
						.pid = 1003, .tid = 1003, .comm = "python",
						.start_mono_ns = (uint64_t)(e - late3), .end_mono_ns = (uint64_t)e,
						.wall_ns = (uint64_t)(t0 + e - late3), .reason = "preempted", .cpu = 3,
						.by_pid = 777, .by_tid = 777, .by_comm = "stress-ng",
					};
					rc |= cw_writer_offcpu(w, &o);
				}
			}
		}
		/* explain's window comes from the per-second aggregates of
		 * events: one synchronize at each end of the run. */
		for (int k = 0; k < 2; k++) {
			int64_t e = k ? groups * step : 0;
			struct cw_event_row ev = {
				.mono_ns = (uint64_t)e, .wall_ns = (uint64_t)(t0 + e + (n ? skew : 0)), .duration_ns = MS,
				.pid = 1000, .tid = 1000, .comm = "python", .source = "cuda", .op = "cudaStreamSynchronize",
				.has_ret = 1, .device = 0,
			};
			rc |= cw_writer_event(w, &ev);
		}
		rc |= cw_writer_free(w);
	}
	rc |= cw_exec(st->db, "INSERT INTO meta (key, value) VALUES ('merge.skew',"
			      " '{\"reference\":\"node1\",\"nodes\":{\"node1\":{\"offset_ns\":0},"
			      "\"node2\":{\"offset_ns\":250000000}}}')");
	cw_store_close(st);
	return rc != 0;
}

int main(int argc, char **argv)
{
	long calls = argc > 2 ? atol(argv[2]) : 1000000;
	int nranks = argc > 3 ? atoi(argv[3]) : 8, reps = argc > 4 ? atoi(argv[4]) : 5;
	double tl[64], ta[64], te[64];
	struct cw_store *st;
	char err[512];
	int found = 0;
	uint64_t t;

	if (argc < 2 || nranks < 4 || nranks > 64 || reps < 1 || reps > 64) {
		fprintf(stderr, "usage: nccl_arrival_bench PATH [CALLS] [RANKS 4..64] [REPS]\n");
		return 2;
	}
	t = cw_monotonic_ns();
	if (build(argv[1], calls, nranks))
		return 1;
	printf("built %s: %ld nccl_calls rows (%ld collectives x %d ranks) in %.1f s\n", argv[1],
	       calls / nranks * nranks, calls / nranks, nranks, (double)(cw_monotonic_ns() - t) / 1e9);
	if (cw_store_open(&st, argv[1], CW_STORE_READONLY, err, sizeof(err))) {
		fprintf(stderr, "nccl_arrival_bench: %s\n", err);
		return 1;
	}
	for (int k = 0; k < reps; k++) {
		struct cw_explain_opts o = { 0 };
		struct cw_explain_result r;
		json_t *ranks;

		/* load + analyse: explain --ranks's path, timed apart. */
		t = cw_monotonic_ns();
		ranks = cw_nccl_ranks_json(st->db, &o, 0, UINT64_MAX / 2);
		ta[k] = (double)(cw_monotonic_ns() - t) / 1e6;
		json_decref(ranks);
		t = cw_monotonic_ns();
		if (cw_explain_run(st->db, &o, &r))
			return 1;
		te[k] = (double)(cw_monotonic_ns() - t) / 1e6;
		found = 0;
		for (int i = 0; i < r.count; i++)
			if (r.chains[i].kind == CW_KIND_NCCL_STRAGGLER && r.chains[i].rank == 3 &&
			    !strcmp(r.chains[i].because, "cpu_preemption"))
				found = 1;
		cw_explain_result_free(&r);
		tl[k] = 0;
	}
	(void)tl;
	qsort(ta, (size_t)reps, sizeof(ta[0]), cmp_d);
	qsort(te, (size_t)reps, sizeof(te[0]), cmp_d);
	printf("load + arrival analysis (explain --ranks): median %.0f ms (min %.0f, max %.0f) over %d runs\n",
	       ta[reps / 2], ta[0], ta[reps - 1], reps);
	printf("whole explain run (nccl_straggler + %d nccl_wait chains): median %.0f ms (min %.0f, max %.0f)\n",
	       nranks - 1, te[reps / 2], te[0], te[reps - 1]);
	printf("straggler rank 3 (cpu_preemption) found: %s\n", found ? "yes" : "NO");
	cw_store_close(st);
	return found ? 0 : 1;
}
