/* metrics_bench: the cost of /metrics.
 *   metrics_bench live [PROCS] [OPS]   a live registry fed PROCS processes x
 *                                      OPS ops (default 200 x 10, 1,000 calls
 *                                      each): per-call update cost and the
 *                                      render's time (median of 101) and size
 *   metrics_bench store DB             the store families of DB (the whole
 *                                      /metrics of `serve` but the HTTP
 *                                      counters): render time (median of 11,
 *                                      first run reported apart) and size
 * Prints one line of figures per mode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/live_metrics.h"
#include "metrics/families.h"
#include "store/store.h"
#include "util/timeutil.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int live(unsigned procs, unsigned nops)
{
	static const char *const names[] = { "cudaLaunchKernel", "cudaMemcpyAsync", "cudaStreamSynchronize",
					     "cudaMalloc", "cudaFree", "cuLaunchKernel", "cuMemAlloc_v2",
					     "ncclAllReduce", "cudaMemcpy", "cudaEventRecord", "cudaGraphLaunch",
					     "cudaDeviceSynchronize" };
	struct cw_live_metrics *m;
	struct cw_event_row r;
	uint64_t t0, upd, t[101];
	unsigned p, o, k, i;
	size_t size = 0;
	char comm[16];

	if (nops > sizeof(names) / sizeof(names[0]))
		nops = sizeof(names) / sizeof(names[0]);
	if (cw_live_metrics_new(&m, 0))
		return 1;
	memset(&r, 0, sizeof(r));
	r.source = "cuda";
	r.has_ret = 1;
	r.comm = comm;
	t0 = cw_monotonic_ns();
	for (k = 0; k < 1000; k++)
		for (p = 0; p < procs; p++) {
			snprintf(comm, sizeof(comm), "w%u", p % 100000u);
			r.pid = r.tid = 1000 + p;
			for (o = 0; o < nops; o++) {
				r.op = names[o];
				r.mono_ns = (uint64_t)k * 1000000;
				r.duration_ns = 1000 + (uint64_t)((k * 7919 + o * 104729 + p) % 5000000);
				cw_live_metrics_event(m, &r);
			}
		}
	upd = cw_monotonic_ns() - t0;
	for (i = 0; i < 101; i++) {
		struct strbuf sb;

		strbuf_init(&sb, 0);
		t0 = cw_monotonic_ns();
		if (cw_live_metrics_render(m, "bench-node", cw_monotonic_ns(), &sb))
			return 1;
		t[i] = cw_monotonic_ns() - t0;
		size = sb.len;
		strbuf_release(&sb);
	}
	qsort(t, 101, sizeof(t[0]), cmp_u64);
	printf("live: %u processes x %u ops, %u calls: update %.0f ns/call; render median %.3f ms "
	       "(min %.3f, max %.3f), %zu bytes\n",
	       procs, nops, 1000 * procs * nops, (double)upd / (1000.0 * procs * nops), t[50] / 1e6,
	       t[0] / 1e6, t[100] / 1e6, size);
	cw_live_metrics_free(m);
	return 0;
}

static int store(const char *path)
{
	uint64_t t[11], t0;
	struct cw_store *st;
	char err[512];
	size_t size = 0;
	int i;

	if (cw_store_open(&st, path, CW_STORE_READONLY, err, sizeof(err))) {
		fprintf(stderr, "metrics_bench: %s\n", err);
		return 1;
	}
	for (i = 0; i < 11; i++) {
		struct strbuf sb;
		int rc;

		strbuf_init(&sb, 16u << 20);
		t0 = cw_monotonic_ns();
		rc = cw_metrics_store_counters(st->db, &sb);
		if (!rc)
			rc = cw_metrics_store_chains(st->db, &sb);
		if (!rc)
			rc = cw_metrics_store_host(st->db, &sb);
		if (!rc)
			rc = cw_metrics_store_ops(st->db, &sb);
		t[i] = cw_monotonic_ns() - t0;
		size = sb.len;
		strbuf_release(&sb);
		if (rc) {
			fprintf(stderr, "metrics_bench: render failed (%d)\n", rc);
			return 1;
		}
	}
	qsort(t + 1, 10, sizeof(t[0]), cmp_u64);
	printf("store: %s: first render %.1f ms, then median %.2f ms (min %.2f, max %.2f) "
	       "over 10, %zu bytes\n", path, t[0] / 1e6, t[5] / 1e6, t[1] / 1e6, t[10] / 1e6, size);
	cw_store_close(st);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "live"))
		return live(argc > 2 ? (unsigned)atoi(argv[2]) : 200, argc > 3 ? (unsigned)atoi(argv[3]) : 10);
	if (argc == 3 && !strcmp(argv[1], "store"))
		return store(argv[2]);
	fprintf(stderr, "usage: metrics_bench live [PROCS] [OPS] | store DB\n");
	return 2;
}
