/* tenant_resolve_bench [CGROUPS] [REPS]: what naming a new cgroup costs the
 * resolver (never the event path): cw_tenant_resolve_pid (read
 * /proc/PID/cgroup, stat the directory for its id, parse the path, read
 * the environment) for this process moved into each of CGROUPS fresh
 * cgroups named as containerd names them; then the fallback by id (a walk
 * of the tree) and a filter's rescan (trace --container over the tree),
 * per walk. Root; the cgroups are removed at the end. Medians over REPS. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tenant/allow.h"
#include "tenant/resolve.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int move_self(const char *root, const char *path)
{
	char fn[4200];
	FILE *f;

	snprintf(fn, sizeof(fn), "%s%s/cgroup.procs", root, path);
	if (!(f = fopen(fn, "w")))
		return -1;
	fprintf(f, "%d\n", getpid());
	return fclose(f);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200, reps = argc > 2 ? atoi(argv[2]) : 5;
	const char *root = cw_cgroup2_root();
	char base[128], path[4200];
	double *res = calloc((size_t)reps, sizeof(double)), *walk = calloc((size_t)reps, sizeof(double)),
	       *scan = calloc((size_t)reps, sizeof(double));
	struct cw_cgroup_info *in = malloc(sizeof(*in));
	int nwalk = 0;

	if (!root || n < 1 || reps < 1 || !res || !walk || !scan || !in) {
		fprintf(stderr, "usage: tenant_resolve_bench [CGROUPS] [REPS] (root, cgroup v2)\n");
		return 1;
	}
	snprintf(base, sizeof(base), "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod%08x_1111_4222_8333_444455556666.slice", getpid());
	snprintf(path, sizeof(path), "%s/kubepods.slice", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/kubepods.slice/kubepods-besteffort.slice", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s%s", root, base);
	mkdir(path, 0755);
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s%s/cri-containerd-%064x.scope", root, base, i + 1);
		if (mkdir(path, 0755)) {
			perror(path);
			return 1;
		}
	}
	for (int r = 0; r < reps; r++) {
		uint64_t t = 0;
		for (int i = 0; i < n; i++) {
			char rel[4200];
			snprintf(rel, sizeof(rel), "%s/cri-containerd-%064x.scope", base, i + 1);
			if (move_self(root, rel))
				return 1;
			uint64_t t0 = now_ns();
			if (cw_tenant_resolve_pid((uint32_t)getpid(), 0, in) || strcmp(in->t.runtime, "containerd"))
				return 1;
			t += now_ns() - t0;
		}
		res[r] = (double)t / n;
		/* Fallback: the path of an id by a walk (a process gone). */
		uint64_t t0 = now_ns();
		if (cw_cgroup_path_of_id(root, in->id, path, sizeof(path)))
			return 1;
		walk[r] = (double)(now_ns() - t0);
		/* A filter's rescan: every cgroup parsed and matched. */
		struct cw_tenant_allow a;
		char err[128];
		cw_tenant_allow_init(&a);
		cw_tenant_filter_parse(&a.f[0], "--container", "00000000", err, sizeof(err));
		a.nf = 1;
		t0 = now_ns();
		int k = cw_tenant_allow_scan(&a, root, NULL, NULL);
		scan[r] = (double)(now_ns() - t0);
		nwalk = (int)a.walked;
		cw_tenant_allow_free(&a);
		if (k < 1)
			return 1;
	}
	move_self(root, "/");
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s%s/cri-containerd-%064x.scope", root, base, i + 1);
		rmdir(path);
	}
	snprintf(path, sizeof(path), "%s%s", root, base);
	rmdir(path);
	/* The slices too, unless someone else uses them (rmdir fails then). */
	snprintf(path, sizeof(path), "%s/kubepods.slice/kubepods-besteffort.slice", root);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/kubepods.slice", root);
	rmdir(path);
	qsort(res, (size_t)reps, sizeof(double), cmp);
	qsort(walk, (size_t)reps, sizeof(double), cmp);
	qsort(scan, (size_t)reps, sizeof(double), cmp);
	printf("resolve one new cgroup (pid known): %.1f us (median of %d reps over %d cgroups)\n", res[reps / 2] / 1e3,
	       reps, n);
	printf("path of an id by a tree walk (%d cgroups): %.2f ms\n", nwalk, walk[reps / 2] / 1e6);
	printf("filter rescan of the tree (%d cgroups): %.2f ms, %.2f us per cgroup\n", nwalk, scan[reps / 2] / 1e6,
	       scan[reps / 2] / 1e3 / nwalk);
	return 0;
}
