/* soak_bench: a steady stream of calls through decode -> pairing -> the
 * threaded writer -> SQLite with a size cap, as trace runs it (batches
 * committed every 200 ms, the writer on its own thread), paced to RATE
 * calls per second for SECONDS. Every 10 s it prints the calls fed and
 * stored, the process's RSS, the bytes in use against the cap, the events
 * pruned and the back-pressure waits; at the end, the RSS range of the
 * second half and every loss counter (all must be zero but the pruned
 * events, which retention counts).
 *   usage: soak_bench PATH RATE SECONDS CAP_MB */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bpf/events.h"
#include "pipeline/pipeline.h"
#include "store/retention.h"
#include "store/store.h"
#include "store/writer.h"
#include "util/timeutil.h"

static const unsigned ops[] = { CW_OP_cudaLaunchKernel, CW_OP_cudaLaunchKernel, CW_OP_cudaLaunchKernel,
				CW_OP_cudaMemcpyAsync, CW_OP_cudaStreamSynchronize, CW_OP_cudaMalloc };

static long rss_kb(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

int main(int argc, char **argv)
{
	struct cw_writer_opts wo = { .node = "soak", .threaded = 1, .immediate = 1, .batch_rows = 1 << 30 };
	struct cw_session_info si = { .node = "soak", .kind = "bench", .rank = -1, .local_rank = -1 };
	struct cw_pipeline_opts po = { 0 };
	struct cw_pipeline_counters c;
	struct cw_writer_stats ws;
	struct cw_pipeline *p;
	struct cw_writer *w;
	struct cw_store *st;
	long rate, secs, min_rss = -1, max_rss = 0;
	uint64_t t0, fed = 0, next_flush, next_report, ts;
	char err[256];

	if (argc < 5 || (rate = atol(argv[2])) <= 0 || (secs = atol(argv[3])) <= 0 || atol(argv[4]) <= 0) {
		fprintf(stderr, "usage: soak_bench PATH RATE SECONDS CAP_MB\n");
		return 2;
	}
	wo.size_cap_bytes = atol(argv[4]) << 20;
	if (cw_store_open(&st, argv[1], CW_STORE_CREATE, err, sizeof(err))) {
		fprintf(stderr, "soak_bench: %s\n", err);
		return 1;
	}
	if (cw_writer_new(&w, st, &wo) || cw_writer_session_begin(w, &si)) {
		fprintf(stderr, "soak_bench: cannot start the writer\n");
		return 1;
	}
	po.writer = w;
	po.mono_to_wall_ns = (int64_t)(cw_realtime_ns() - cw_monotonic_ns());
	cw_pipeline_new(&p, &po);
	t0 = cw_monotonic_ns();
	next_flush = t0 + 200000000ULL;
	next_report = t0 + 10 * NSEC_PER_SEC;
	printf("%6s %12s %12s %9s %10s %12s %10s\n", "s", "fed", "stored", "rss_kb", "used_mb", "pruned", "bp_waits");
	for (;;) {
		uint64_t now = cw_monotonic_ns(), due = (uint64_t)((double)(now - t0) / 1e9 * (double)rate);

		if (now - t0 >= (uint64_t)secs * NSEC_PER_SEC)
			break;
		/* Feed what is due, in slices of at most 1 ms worth. */
		for (uint64_t k = 0; fed < due && k < (uint64_t)rate / 1000 + 1; k++, fed++) {
			struct cw_call r;

			memset(&r, 0, sizeof(r));
			ts = now - 3000 + (fed % 1000);
			r.e.hdr.type = CW_REC_CALL;
			r.e.hdr.size = sizeof(r);
			r.e.hdr.version = CW_EVENTS_VERSION;
			r.e.hdr.source = CW_SRC_CUDA;
			r.e.hdr.op = (uint16_t)ops[fed % 6];
			r.e.hdr.ts_ns = ts;
			r.e.hdr.pid = 4821;
			r.e.hdr.tid = 4821 + (uint32_t)(fed % 4);
			r.e.hdr.cgroup_id = 77;
			memcpy(r.e.hdr.comm, "python", 7);
			r.e.args[0] = 0x7f0000001000ULL + (fed % 64) * 4096;
			r.e.args[1] = 1 << 20;
			r.e.device = 0;
			r.end_ns = ts + 1500 + (fed % 7) * 100;
			cw_pipeline_feed(p, &r, sizeof(r));
		}
		if (now >= next_flush) {
			cw_pipeline_flush(p, now, 0);
			next_flush = now + 200000000ULL;
		}
		if (now >= next_report) {
			long rss = rss_kb();

			cw_writer_get_stats(w, &ws);
			printf("%6.0f %12llu %12llu %9ld %10.1f %12llu %10llu\n", (double)(now - t0) / 1e9,
			       (unsigned long long)fed, (unsigned long long)ws.events, rss,
			       (double)cw_store_used_bytes(st) / 1048576.0, (unsigned long long)ws.pruned_events,
			       (unsigned long long)ws.backpressure_waits);
			fflush(stdout);
			if (now - t0 >= (uint64_t)secs * NSEC_PER_SEC / 2) {
				if (min_rss < 0 || rss < min_rss)
					min_rss = rss;
				if (rss > max_rss)
					max_rss = rss;
			}
			next_report = now + 10 * NSEC_PER_SEC;
		}
		if (fed >= due) {
			struct timespec d = { 0, 200000 };

			nanosleep(&d, NULL);
		}
	}
	cw_pipeline_flush(p, cw_monotonic_ns(), 0);
	cw_pipeline_get_counters(p, &c);
	cw_writer_get_stats(w, &ws);
	printf("fed %llu calls in %ld s (%.0f calls/s); stored %llu, pruned %llu, failed %llu, rejected %llu,"
	       " unpaired %llu, write errors %llu; back-pressure waits %llu (%.1f ms)\n",
	       (unsigned long long)fed, secs, (double)fed / (double)secs, (unsigned long long)ws.events,
	       (unsigned long long)ws.pruned_events, (unsigned long long)ws.failed_rows,
	       (unsigned long long)(c.rejected_size + c.rejected_type + c.rejected_version),
	       (unsigned long long)c.unpaired_returns, (unsigned long long)c.write_errors,
	       (unsigned long long)ws.backpressure_waits, (double)ws.backpressure_ns / 1e6);
	printf("RSS over the second half: %ld..%ld KiB; database in use %.1f MiB, cap %ld MiB\n", min_rss, max_rss,
	       (double)cw_store_used_bytes(st) / 1048576.0, atol(argv[4]));
	cw_pipeline_free(p);
	cw_writer_free(w);
	cw_store_close(st);
	return ws.failed_rows || c.write_errors || ws.events != fed ? 1 : 0;
}
