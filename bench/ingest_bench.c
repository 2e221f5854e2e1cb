/* ingest_bench: events per second through decode -> pairing -> writer ->
 * SQLite on one core, with the drop and reject counters checked to be zero.
 *
 * The records are built in memory ahead of time exactly as the CUDA probes
 * lay them out (one CW_REC_CALL per call, entry and return together), so
 * the figure is the userspace pipeline's, not the generator's.
 *   usage: ingest_bench [CALLS] [RUNS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf/events.h"
#include "pipeline/pipeline.h"
#include "store/store.h"
#include "store/writer.h"
#include "util/timeutil.h"

static const unsigned ops[] = { CW_OP_cudaLaunchKernel, CW_OP_cudaLaunchKernel, CW_OP_cudaLaunchKernel,
				CW_OP_cudaMemcpyAsync, CW_OP_cudaStreamSynchronize, CW_OP_cudaMalloc };

static void fill_hdr(struct cw_hdr *h, unsigned type, size_t size, unsigned op, uint64_t ts, uint32_t tid)
{
	memset(h, 0, sizeof(*h));
	h->type = (uint16_t)type;
	h->size = (uint16_t)size;
	h->version = CW_EVENTS_VERSION;
	h->source = CW_SRC_CUDA;
	h->op = (uint16_t)op;
	h->ts_ns = ts;
	h->pid = 4821;
	h->tid = tid;
	h->cgroup_id = 1234;
	memcpy(h->comm, "python", 7);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 1000000;
	int runs = argc > 2 ? atoi(argv[2]) : 5, r;
	struct cw_call *recs = calloc((size_t)calls, sizeof(*recs));
	double *rates = calloc((size_t)runs, sizeof(double));
	long i;

	if (!recs || !rates || calls <= 0 || runs <= 0)
		return 2;
	for (i = 0; i < calls; i++) {
		uint64_t ts = 1000000000ULL + (uint64_t)i * 2000;
		unsigned op = ops[i % 6];

		fill_hdr(&recs[i].e.hdr, CW_REC_CALL, sizeof(recs[i]), op, ts, 4821 + (uint32_t)(i % 4));
		recs[i].e.args[0] = 0x7f0000001000ULL;
		recs[i].e.args[1] = 1 << 20;
		recs[i].e.device = 0;
		recs[i].end_ns = ts + 1500 + (uint64_t)(i % 7) * 100;
	}
	for (r = 0; r < runs; r++) {
		char path[] = "/tmp/cw-ingest-XXXXXX", side[64], err[256];
		struct cw_writer_opts wo = { .node = "bench", .session_id = 1 };
		struct cw_pipeline_opts po = { 0 };
		struct cw_pipeline_counters c;
		struct cw_pipeline *p;
		struct cw_writer *w;
		struct cw_store *st;
		uint64_t t0, t1;
		int fd = mkstemp(path);

		close(fd);
		unlink(path);
		if (cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)) || cw_writer_new(&w, st, &wo)) {
			fprintf(stderr, "ingest_bench: %s\n", err);
			return 1;
		}
		po.writer = w;
		cw_pipeline_new(&p, &po);
		t0 = cw_monotonic_ns();
		for (i = 0; i < calls; i++) {
			cw_pipeline_feed(p, &recs[i], sizeof(recs[i]));
			if ((i & 0xffff) == 0xffff)
				cw_pipeline_flush(p, 0, 0);
		}
		cw_pipeline_flush(p, 0, 0);
		t1 = cw_monotonic_ns();
		cw_pipeline_get_counters(p, &c);
		cw_pipeline_free(p);
		cw_writer_free(w);
		cw_store_close(st);
		if (c.calls != (uint64_t)calls || c.rejected_size || c.rejected_type || c.rejected_version ||
		    c.unpaired_returns || c.write_errors) {
			fprintf(stderr, "ingest_bench: lost events: stored %llu of %ld\n", (unsigned long long)c.calls,
				calls);
			return 1;
		}
		rates[r] = (double)calls / ((double)(t1 - t0) / 1e9);
		printf("run %d: %ld calls in %.3f s: %.0f calls/s, 0 dropped\n", r + 1, calls, (double)(t1 - t0) / 1e9,
		       rates[r]);
		unlink(path);
		snprintf(side, sizeof(side), "%s-wal", path);
		unlink(side);
		snprintf(side, sizeof(side), "%s-shm", path);
		unlink(side);
	}
	qsort(rates, (size_t)runs, sizeof(double), cmp_double);
	printf("median: %.0f stored calls/s over %d runs\n", rates[runs / 2], runs);
	free(recs);
	free(rates);
	return 0;
}
