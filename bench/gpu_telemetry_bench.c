/* GPU telemetry cost: the agent's CPU time per device per sample (NVML
 * reads through the dlopen'ed library, sanitizing, and the gpu_samples /
 * gpu_processes inserts), the memory it adds, and the store bytes per
 * device-hour. Runs the real telemetry thread (src/gpu/sampler.c) against
 * the library in $CW_NVML_LIB (the fake one without a GPU: its calls are
 * cheap, so the figure is causeway's own share; a real driver adds its
 * ioctls) with D devices at a fast interval, and reports medians over R
 * runs.
 *   CW_NVML_LIB=build/fixtures/fakenvml/libnvidia-ml.so.1 \
 *       build/bench/gpu_telemetry_bench [DEVICES] [SECONDS] [RUNS] */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "gpu/sampler.h"
#include "store/gpu_store.h"
#include "store/store.h"
#include "util/timeutil.h"

struct sink_ctx {
	struct cw_gpu_store *gs;
	pthread_mutex_t mu;
	uint64_t rows;
};

static void on_samples(void *ctx, const struct cw_gpu_sample *s, int n, const struct cw_gpu_device *d)
{
	struct sink_ctx *c = ctx;

	pthread_mutex_lock(&c->mu);
	for (int i = 0; i < n; i++)
		if (!cw_gpu_store_sample(c->gs, &s[i], d[i].uuid))
			c->rows++;
	pthread_mutex_unlock(&c->mu);
}

static void on_process(void *ctx, int device, uint64_t mono, uint64_t wall, const struct cw_gpu_proc *p)
{
	struct sink_ctx *c = ctx;

	pthread_mutex_lock(&c->mu);
	cw_gpu_store_process(c->gs, device, mono, wall, p);
	pthread_mutex_unlock(&c->mu);
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			v = atol(line + 6);
	if (f)
		fclose(f);
	return v;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int devices = argc > 1 ? atoi(argv[1]) : 8;
	double secs = argc > 2 ? atof(argv[2]) : 5;
	int runs = argc > 3 ? atoi(argv[3]) : 5;
	double per[32], rssd[32], bytes_per_row = 0;
	char env[64], err[256], why[256], path[] = "/tmp/cw-gpubench-XXXXXX";

	if (runs > 32)
		runs = 32;
	snprintf(env, sizeof(env), "devices=%d,pid=%d", devices, (int)getpid());
	setenv("CW_FAKE_NVML", env, 1);
	for (int r = 0; r < runs; r++) {
		struct cw_store *st;
		struct sink_ctx c = {.mu = PTHREAD_MUTEX_INITIALIZER};
		struct cw_gpu_sampler *s;
		struct cw_gpu_sampler_stats ss;
		struct cw_gpu_sampler_opts o = {.interval_ns = 10 * NSEC_PER_MSEC, .kmsg_path = ""};
		struct cw_gpu_sink sink = {&c, NULL, on_samples, on_process, NULL};
		long rss0;
		double c0, c1;
		int fd = mkstemp(path);

		close(fd);
		unlink(path);
		if (cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)) ||
		    cw_gpu_store_new(&c.gs, st->db, "bench", 1)) {
			fprintf(stderr, "store: %s\n", err);
			return 1;
		}
		cw_exec(st->db, "BEGIN");
		rss0 = rss_kib();
		c0 = cpu_s();
		if (cw_gpu_sampler_start(&s, &o, &sink, why, sizeof(why)) || !s) {
			fprintf(stderr, "sampler: %s\n", why);
			return 1;
		}
		{
			struct timespec ts = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
			nanosleep(&ts, NULL);
		}
		cw_gpu_sampler_stats(s, &ss);
		rssd[r] = (double)(rss_kib() - rss0);
		cw_gpu_sampler_stop(s);
		c1 = cpu_s();
		pthread_mutex_lock(&c.mu);
		cw_exec(st->db, "COMMIT");
		pthread_mutex_unlock(&c.mu);
		if (!ss.ndev || !c.rows) {
			fprintf(stderr, "no samples (is CW_NVML_LIB the fake library?)\n");
			return 1;
		}
		per[r] = (c1 - c0) / (double)c.rows * 1e6;
		{
			sqlite3_stmt *q;
			if (sqlite3_prepare_v2(st->db, "SELECT sum(pgsize) FROM dbstat WHERE name = 'gpu_samples'", -1, &q,
					       NULL) == SQLITE_OK &&
			    sqlite3_step(q) == SQLITE_ROW)
				bytes_per_row = (double)sqlite3_column_int64(q, 0) / (double)c.rows;
			sqlite3_finalize(q);
		}
		printf("run %d: %d devices, %llu samples (%llu intervals) in %.1fs, %.1f us CPU per device-sample"
		       " (NVML %.1f us), RSS +%.0f KiB\n",
		       r, ss.ndev, (unsigned long long)c.rows, (unsigned long long)ss.intervals, secs, per[r],
		       (double)ss.sample_ns / 1e3 / (double)ss.samples, rssd[r]);
		cw_gpu_store_free(c.gs);
		cw_store_close(st);
		cw_store_remove_files(path);
		strcpy(path, "/tmp/cw-gpubench-XXXXXX");
	}
	qsort(per, (size_t)runs, sizeof(per[0]), cmp_d);
	qsort(rssd, (size_t)runs, sizeof(rssd[0]), cmp_d);
	printf("median: %.1f us CPU per device per sample = %.4f %% of one CPU per device at the default 1 s;"
	       " RSS +%.0f KiB; gpu_samples %.0f bytes per row = %.2f MiB per device-day\n",
	       per[runs / 2], per[runs / 2] / 1e4, rssd[runs / 2], bytes_per_row, bytes_per_row * 86400 / 1048576.0);
	return 0;
}
