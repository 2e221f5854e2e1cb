/* ingest_bench: events per second through decode -> pairing -> writer ->
 * SQLite on one core, with the drop and reject counters checked to be zero.
 *
 * The records are built in memory ahead of time exactly as the CUDA probes
 * lay them out (one CW_REC_CALL per call, entry and return together), so
 * the figure is the userspace pipeline's, not the generator's.
 *
 * Then the ceiling: the same rows inserted straight into a fresh store (same
 * schema, pragmas, 32-row INSERT and 50,000-row transactions as the writer)
 * by SQLite alone, no decode, pairing, statistics or interning, so the
 * figure above can be read as a share of what SQLite itself does on this
 * core.
 *
 * "threaded" runs the writer on a thread of its own (trace's mode): decode,
 * pairing and interning on the caller's thread, SQLite on the other; the
 * CPU time of both over the wall time is printed as the cores used, with
 * the on-disk bytes per stored call (file, and the calls table with its
 * index alone) and the back-pressure waits.
 *   usage: ingest_bench [CALLS] [RUNS] [threaded] */
#include <sys/resource.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sqlite3.h>

#include "bpf/events.h"
#include "pipeline/ops.h"
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

#define CEIL_ROWS 32     /* rows per INSERT, as the writer */
#define CEIL_COLS 16     /* per-row parameters: every column of a v7 calls row */
#define CEIL_TXN 50016   /* rows per transaction, a multiple of CEIL_ROWS */

/* Rows per second SQLite alone stores for the calls in recs; 0 on error. */
static double sqlite_ceiling(const struct cw_call *recs, long calls)
{
	char path[] = "/tmp/cw-ceiling-XXXXXX", err[256], *sql;
	struct cw_store *st;
	sqlite3_stmt *ins = NULL;
	size_t off = 0, cap = 65536;
	uint64_t t0 = 0, t1 = 0;
	long i = 0;
	int k, j, rc = 0, fd = mkstemp(path);

	close(fd);
	unlink(path);
	if (cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)) || !(sql = malloc(cap)))
		return 0;
	/* Schema v7's narrow row: the thread, op and string rows are
	 * interned elsewhere, as the writer does. */
	off += (size_t)snprintf(sql, cap, "INSERT INTO calls (id, th, op, t, dur, a0, a1, a2, a3, bytes, s, ret, stack,"
				" pystack, anomalous, sq) VALUES ");
	for (k = 0; k < CEIL_ROWS; k++) {
		off += (size_t)snprintf(sql + off, cap - off, "%s(?%d", k ? "," : "", 1 + k * CEIL_COLS);
		for (j = 1; j < CEIL_COLS; j++)
			off += (size_t)snprintf(sql + off, cap - off, ",?%d", 1 + k * CEIL_COLS + j);
		off += (size_t)snprintf(sql + off, cap - off, ")");
	}
	if (sqlite3_prepare_v2(st->db, sql, -1, &ins, NULL) != SQLITE_OK)
		goto out;
	t0 = cw_monotonic_ns();
	for (i = 0; i + CEIL_ROWS <= calls && !rc; i += CEIL_ROWS) {
		if (i % CEIL_TXN == 0)
			rc |= cw_exec(st->db, i ? "COMMIT; BEGIN" : "BEGIN");
		for (k = 0; k < CEIL_ROWS; k++) {
			const struct cw_call *c = &recs[i + k];
			int b = 1 + k * CEIL_COLS;

			/* The columns whose value changes from call to call
			 * here; the others keep the value bound first (the
			 * least binding any writer could do). */
			sqlite3_bind_int64(ins, b + 0, i + k + 1);
			sqlite3_bind_int64(ins, b + 1, c->e.hdr.tid - 4820);
			sqlite3_bind_int64(ins, b + 2, c->e.hdr.op % 16 + 1);
			sqlite3_bind_int64(ins, b + 3, (sqlite3_int64)(c->e.hdr.ts_ns & ((1ULL << 31) - 1)));
			sqlite3_bind_int64(ins, b + 4, (sqlite3_int64)(c->end_ns - c->e.hdr.ts_ns));
			if (i)
				continue;
			for (j = 0; j < 4; j++)
				sqlite3_bind_int64(ins, b + 5 + j, (sqlite3_int64)c->e.args[j]);
			sqlite3_bind_int64(ins, b + 9, (sqlite3_int64)c->e.args[1]);
			sqlite3_bind_null(ins, b + 10);
			sqlite3_bind_int64(ins, b + 11, c->retval);
			sqlite3_bind_null(ins, b + 12);
			sqlite3_bind_null(ins, b + 13);
			sqlite3_bind_int64(ins, b + 14, 0);
			sqlite3_bind_null(ins, b + 15);
		}
		rc |= sqlite3_step(ins) != SQLITE_DONE;
		sqlite3_reset(ins);
	}
	rc |= cw_exec(st->db, "COMMIT");
	t1 = cw_monotonic_ns();
out:
	sqlite3_finalize(ins);
	free(sql);
	cw_store_close(st);
	cw_store_remove_files(path);
	return rc || !ins ? 0 : (double)(i) / ((double)(t1 - t0) / 1e9);
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
	int threaded = argc > 3 && !strcmp(argv[3], "threaded");
	struct cw_call *recs = calloc((size_t)calls, sizeof(*recs));
	double *rates = calloc((size_t)runs, sizeof(double)), *ceil_rates = calloc((size_t)runs, sizeof(double));
	long i;

	if (!recs || !rates || !ceil_rates || calls <= 0 || runs <= 0)
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
		char path[] = "/tmp/cw-ingest-XXXXXX", err[256];
		struct cw_writer_opts wo = { .node = "bench", .session_id = 1, .threaded = threaded };
		struct cw_writer_stats ws;
		struct rusage ru0, ru1;
		struct stat sb;
		double cpu, calls_bytes = 0;
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
		getrusage(RUSAGE_SELF, &ru0);
		t0 = cw_monotonic_ns();
		for (i = 0; i < calls; i++) {
			cw_pipeline_feed(p, &recs[i], sizeof(recs[i]));
			if ((i & 0xffff) == 0xffff)
				cw_pipeline_flush(p, 0, 0);
		}
		cw_pipeline_flush(p, 0, 0);
		t1 = cw_monotonic_ns();
		getrusage(RUSAGE_SELF, &ru1);
		cw_pipeline_get_counters(p, &c);
		cw_writer_get_stats(w, &ws);
		cw_pipeline_free(p);
		cw_writer_free(w);
		{
			sqlite3_stmt *q;

			if (sqlite3_prepare_v2(st->db, "SELECT sum(pgsize) FROM dbstat WHERE name IN ('calls', 'calls_slow')",
					       -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
				calls_bytes = sqlite3_column_double(q, 0);
			sqlite3_finalize(q);
		}
		cw_store_close(st);
		cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec + ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
		      (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec + ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) /
			      1e6;
		if (c.calls != (uint64_t)calls || c.rejected_size || c.rejected_type || c.rejected_version ||
		    c.unpaired_returns || c.write_errors || ws.events != (uint64_t)calls || ws.failed_rows) {
			fprintf(stderr, "ingest_bench: lost events: stored %llu of %ld\n", (unsigned long long)c.calls,
				calls);
			return 1;
		}
		rates[r] = (double)calls / ((double)(t1 - t0) / 1e9);
		printf("run %d: %ld calls in %.3f s: %.0f calls/s, 0 dropped, %.2f cores, %llu back-pressure waits,"
		       " %.1f bytes/call on disk (calls table and index: %.1f)\n",
		       r + 1, calls, (double)(t1 - t0) / 1e9, rates[r], cpu / ((double)(t1 - t0) / 1e9),
		       (unsigned long long)ws.backpressure_waits,
		       stat(path, &sb) == 0 ? (double)sb.st_size / (double)calls : 0.0, calls_bytes / (double)calls);
		cw_store_remove_files(path);
	}
	qsort(rates, (size_t)runs, sizeof(double), cmp_double);
	printf("median: %.0f stored calls/s over %d runs\n", rates[runs / 2], runs);
	for (r = 0; r < runs; r++) {
		ceil_rates[r] = sqlite_ceiling(recs, calls);
		if (ceil_rates[r] <= 0) {
			fprintf(stderr, "ingest_bench: the SQLite-only insert failed\n");
			return 1;
		}
		printf("sqlite only, run %d: %.0f rows/s\n", r + 1, ceil_rates[r]);
	}
	qsort(ceil_rates, (size_t)runs, sizeof(double), cmp_double);
	printf("median: %.0f rows/s by SQLite alone; the pipeline reaches %.0f %% of it\n", ceil_rates[runs / 2],
	       100.0 * rates[runs / 2] / ceil_rates[runs / 2]);
	free(recs);
	free(rates);
	free(ceil_rates);
	return 0;
}
