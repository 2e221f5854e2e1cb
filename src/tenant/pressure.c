/* Per-cgroup pressure: PSI ({cpu,memory,io}.pressure, cgroup v2, kernel
 * >= 4.20 with CONFIG_PSI) and CFS bandwidth throttling (cpu.stat's
 * nr_periods, nr_throttled, throttled_usec and the quota in cpu.max). On a
 * hybrid host the v2 tree has PSI but no cpu controller: the quota and
 * throttling live in the v1 cpu hierarchy (cpu.cfs_quota_us,
 * cpu.cfs_period_us, cpu.stat's throttled_time in ns). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tenant/pressure.h"
#include "tenant/resolve.h"
#include "util/readfile.h"

/* The files read here are a few lines each. */
#define SMALL_FILE 4096

static int read_small(const char *dir, const char *path, const char *file, char *buf, size_t len)
{
	char fn[CW_CGPATH_MAX + 128];
	ssize_t r;

	if ((size_t)snprintf(fn, sizeof(fn), "%s%s/%s", dir, strcmp(path, "/") ? path : "", file) >= sizeof(fn))
		return -ENAMETOOLONG;
	r = cw_read_small(fn, buf, len);
	return r < 0 ? (int)r : 0;
}

/* PSI text ("some avg10=.. avg60=.. avg300=.. total=N\nfull ..."). */
static int cw_psi_parse(const char *text, double *some_avg10, int64_t *some_total, int64_t *full_total)
{
	const char *line = text;
	int found = 0;

	*some_avg10 = -1;
	*some_total = *full_total = -1;
	while (line && *line) {
		double a10, a60, a300;
		unsigned long long total;
		char kind[8];

		if (sscanf(line, "%7s avg10=%lf avg60=%lf avg300=%lf total=%llu", kind, &a10, &a60, &a300, &total) == 5) {
			if (!strcmp(kind, "some")) {
				*some_avg10 = a10;
				*some_total = (int64_t)total;
				found = 1;
			} else if (!strcmp(kind, "full")) {
				*full_total = (int64_t)total;
			}
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return found ? 0 : -EINVAL;
}

/* "key value" lines: the value of key, -1 when absent. */
static int64_t kv(const char *text, const char *key)
{
	size_t kl = strlen(key);
	const char *p = text;

	while (p && *p) {
		if (!strncmp(p, key, kl) && p[kl] == ' ')
			return strtoll(p + kl + 1, NULL, 10);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -1;
}

/* cpu.stat text: v2 throttled_usec, or v1 throttled_time (ns) when v1. */
static int cw_cpu_stat_parse(const char *text, int v1, int64_t *periods, int64_t *throttled, int64_t *throttled_us)
{
	*periods = kv(text, "nr_periods");
	*throttled = kv(text, "nr_throttled");
	if (v1) {
		int64_t ns = kv(text, "throttled_time");
		*throttled_us = ns >= 0 ? ns / 1000 : -1;
	} else {
		*throttled_us = kv(text, "throttled_usec");
	}
	return *periods >= 0 || *throttled >= 0 ? 0 : -ENOENT;
}

/* cpu.max text ("max 100000" or "50000 100000"); quota -1 for max. */
static int cw_cpu_max_parse(const char *text, int64_t *quota_us, int64_t *period_us)
{
	char q[32];
	long long p;

	if (sscanf(text, "%31s %lld", q, &p) != 2)
		return -EINVAL;
	*period_us = p;
	*quota_us = strcmp(q, "max") ? strtoll(q, NULL, 10) : -1;
	return 0;
}

int cw_cgroup_pressure_read(const char *path, uint32_t pid, struct cw_pressure_row *r)
{
	static const char *const files[3] = { "cpu.pressure", "memory.pressure", "io.pressure" };
	const char *root = cw_cgroup2_root();
	char buf[SMALL_FILE], v1[CW_CGPATH_MAX + 1];
	int any = 0;

	for (int i = 0; i < 6; i++)
		r->psi_total_us[i] = -1;
	for (int i = 0; i < 3; i++)
		r->psi_avg10[i] = -1;
	r->nr_periods = r->nr_throttled = r->throttled_usec = r->quota_us = r->period_us = -1;
	if (!root)
		return -ENOENT;
	for (int i = 0; i < 3; i++)
		if (!read_small(root, path, files[i], buf, sizeof(buf)) &&
		    !cw_psi_parse(buf, &r->psi_avg10[i], &r->psi_total_us[2 * i], &r->psi_total_us[2 * i + 1]))
			any = 1;
	/* Throttling: the v2 cpu controller when it is enabled there (cpu.max
	 * exists), else the v1 cpu hierarchy of the process. */
	if (!read_small(root, path, "cpu.max", buf, sizeof(buf))) {
		cw_cpu_max_parse(buf, &r->quota_us, &r->period_us);
		if (!read_small(root, path, "cpu.stat", buf, sizeof(buf)) &&
		    !cw_cpu_stat_parse(buf, 0, &r->nr_periods, &r->nr_throttled, &r->throttled_usec))
			any = 1;
	} else if (pid && !cw_pid_cgroup_v1_path(pid, "cpu", v1, sizeof(v1))) {
		if (!read_small("/sys/fs/cgroup/cpu", v1, "cpu.cfs_quota_us", buf, sizeof(buf)))
			r->quota_us = strtoll(buf, NULL, 10);
		if (!read_small("/sys/fs/cgroup/cpu", v1, "cpu.cfs_period_us", buf, sizeof(buf)))
			r->period_us = strtoll(buf, NULL, 10);
		if (r->quota_us < 0)
			r->quota_us = -1;
		if (!read_small("/sys/fs/cgroup/cpu", v1, "cpu.stat", buf, sizeof(buf)) &&
		    !cw_cpu_stat_parse(buf, 1, &r->nr_periods, &r->nr_throttled, &r->throttled_usec))
			any = 1;
	}
	return any ? 0 : -ENOENT;
}
