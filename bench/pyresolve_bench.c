/* pyresolve: userspace cost of resolving one captured Python stack to
 * (file, function, line) per frame, with warm caches, as the pipeline does
 * for every CW_REC_PYSTACK record.
 *
 *   pyresolve_bench PYTHON [ROUNDS]
 * starts PYTHON on tests/fixtures/py/where_sleep.py, captures the deepest
 * thread's stack once (code addresses and instruction offsets, what BPF
 * records), then resolves that stack ROUNDS times (default 20000) and
 * prints the median and p99 per stack: with the default revalidation
 * window (fingerprints re-read from the target at most every 100 ms per
 * code object) and with revalidation on every frame (the worst case: one
 * process_vm_readv per frame). Target: median <= 15 us per stack. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pyframe/framewalk.h"
#include "pyframe/resolver.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void run(struct cw_pyres *r, pid_t pid, const struct cw_py_frame *fr, int n, int rounds, const char *label)
{
	uint64_t *t = malloc((size_t)rounds * sizeof(*t));
	struct cw_py_location loc;
	int i, k;

	for (i = 0; i < rounds; i++) {
		uint64_t t0 = now_ns();

		for (k = 0; k < n; k++)
			if (cw_pyres_resolve(r, (uint32_t)pid, fr[k].code, fr[k].lasti, &loc)) {
				fprintf(stderr, "resolve failed\n");
				exit(1);
			}
		t[i] = now_ns() - t0;
	}
	qsort(t, (size_t)rounds, sizeof(*t), cmp_u64);
	printf("%-28s frames %d  median %.2f us/stack (%.3f us/frame)  p99 %.2f us\n", label, n,
	       t[rounds / 2] / 1000.0, t[rounds / 2] / 1000.0 / n, t[rounds * 99 / 100] / 1000.0);
	free(t);
}

int main(int argc, char **argv)
{
	static struct cw_py_thread th[64];
	static struct cw_py_frame fr[CW_PY_MAX_FRAMES], best[CW_PY_MAX_FRAMES];
	int rounds = argc > 2 ? atoi(argv[2]) : 20000, nt, i, nbest = 0, trunc;
	struct cw_py_location loc;
	struct cw_pyres *r;
	struct cw_py_proc *p;
	char why[256], line[1 << 14];
	int out[2];
	FILE *f;
	pid_t pid;

	if (argc < 2 || rounds <= 0) {
		fprintf(stderr, "usage: pyresolve_bench PYTHON [ROUNDS]\n");
		return 2;
	}
	if (pipe(out))
		return 1;
	pid = fork();
	if (pid == 0) {
		dup2(out[1], 1);
		close(out[0]);
		execl(argv[1], argv[1], "tests/fixtures/py/where_sleep.py", (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	f = fdopen(out[0], "r");
	if (!fgets(line, sizeof(line), f)) {
		fprintf(stderr, "workload did not start\n");
		return 1;
	}
	if (cw_pyres_new(&r) || !(p = cw_pyres_proc(r, (uint32_t)pid, why, sizeof(why)))) {
		fprintf(stderr, "attach: %s\n", why);
		kill(pid, SIGKILL);
		return 1;
	}
	nt = cw_py_threads(p, th, 64);
	for (i = 0; i < nt; i++) {
		int n = cw_py_walk(p, th[i].frame, fr, CW_PY_MAX_FRAMES, &trunc);

		if (n > nbest) {
			nbest = n;
			memcpy(best, fr, sizeof(fr[0]) * (size_t)n);
		}
	}
	if (!nbest) {
		fprintf(stderr, "no python frames\n");
		kill(pid, SIGKILL);
		return 1;
	}
	for (i = 0; i < nbest; i++) /* warm the caches */
		cw_pyres_resolve(r, (uint32_t)pid, best[i].code, best[i].lasti, &loc);
	printf("python %s (%s), %d rounds\n", argv[1], p->binary, rounds);
	run(r, pid, best, nbest, rounds, "warm (100 ms revalidation)");
	cw_pyres_set_revalidate_ns(r, 0);
	run(r, pid, best, nbest, rounds / 10 ? rounds / 10 : 1, "revalidate every frame");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	cw_pyres_free(r);
	return 0;
}
