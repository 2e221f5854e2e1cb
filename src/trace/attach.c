/* Library copies and processes of a trace: attaching the probes to every
 * copy (at start, from discovery, from the rescan) and enrolling the
 * processes that use them. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "loader/discover.h"
#include "loader/session.h"
#include "tenant/resolve.h"
#include "trace/python.h"
#include "trace/session.h"
#include "trace/tenant.h"
#include "util/log.h"
#include "util/timeutil.h"

static int is_known(const struct trace *t, uint32_t pid)
{
	int i;

	for (i = 0; i < t->nknown; i++)
		if (t->known[i] == pid)
			return 1;
	return 0;
}

void trace_add_pending(struct trace *t, uint32_t pid)
{
	int i;

	if (!pid || is_known(t, pid))
		return;
	for (i = 0; i < t->npending; i++)
		if (t->pending[i] == pid)
			return;
	if (t->npending < (int)(sizeof(t->pending) / sizeof(t->pending[0])))
		t->pending[t->npending++] = pid;
	else
		t->pending_lost++;
}

/* Where CUDA libraries live when no process has mapped them yet: the
 * toolkit prefixes and the distribution's library directories (the
 * driver's libcuda.so.1). Attaching there first is what lets a launched
 * command be traced from its first call. */
static const char *const lib_dirs[] = {
	"/usr/local/cuda*/lib64", "/usr/local/cuda*/lib", "/usr/local/cuda*/lib/stubs",
	"/usr/local/cuda*/targets/*/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/wsl/lib",
	NULL,
};

static void note_version(struct trace *t, const char *path)
{
	int k = cw_lib_kind_of(path);

	if (k == CW_LIB_CUDART && !t->cuda_version[0]) {
		char real[PATH_MAX];
		const char *p;

		cw_lib_version(path, t->cuda_version, sizeof(t->cuda_version));
		/* CUDA 13 ships libcudart.so.13 without the minor in the file
		 * name; the toolkit prefix (cuda-13.0) has it. */
		if (!strchr(t->cuda_version, '.') && realpath(path, real) && (p = strstr(real, "/cuda-")) &&
		    p[6] >= '0' && p[6] <= '9')
			snprintf(t->cuda_version, sizeof(t->cuda_version), "%.*s", (int)strcspn(p + 6, "/"), p + 6);
	}
	else if (k == CW_LIB_CUDA && !t->driver_version[0])
		cw_lib_version(path, t->driver_version, sizeof(t->driver_version));
}

/* Main thread (trace_rescan) and discovery thread. */
int trace_attach_path(struct trace *t, const char *path)
{
	char err[512];
	struct cw_attach_report rep;
	int rc;

	pthread_mutex_lock(&t->attach_lock);
	rc = cw_cuda_probes_attach(t->cp, path, &rep, err, sizeof(err));
	if (rc >= 0)
		cw_live_mark_path(t->live, path);
	if (rc > 0) {
		note_version(t, path);
		cw_debug("attached %d probes in %.1f ms to \"%s\"", rc, rep.ns / 1e6, path);
	} else if (rc < 0 && rc != -ENOENT) {
		cw_debug("%s", err);
	}
	pthread_mutex_unlock(&t->attach_lock);
	return rc;
}

/* Discovery thread: a copy a process has just mapped. */
int trace_live_attach(void *ctx, const struct cw_lib_copy *lib)
{
	return trace_attach_path(ctx, lib->path);
}

void trace_attach_known_dirs(struct trace *t)
{
	int i;

	for (i = 0; lib_dirs[i]; i++) {
		glob_t g;
		size_t j;

		if (glob(lib_dirs[i], GLOB_ONLYDIR, NULL, &g))
			continue;
		for (j = 0; j < g.gl_pathc; j++) {
			DIR *d = opendir(g.gl_pathv[j]);
			struct dirent *e;

			if (!d)
				continue;
			while ((e = readdir(d))) {
				char p[PATH_MAX];
				struct stat st;

				if (cw_lib_kind_of(e->d_name) < 0)
					continue;
				snprintf(p, sizeof(p), "%s/%s", g.gl_pathv[j], e->d_name);
				if (!stat(p, &st) && S_ISREG(st.st_mode))
					trace_attach_path(t, p);
			}
			closedir(d);
		}
		globfree(&g);
	}
}

struct scan_ctx {
	struct trace *t;
	uint32_t pids[MAX_PIDS];
	int npids;
};

static int on_lib(void *ctx, const struct cw_lib_copy *lib)
{
	struct scan_ctx *sc = ctx;
	struct trace *t = sc->t;
	int i;

	/* A copy first attached here, after start, while its process runs:
	 * discovery did not see it load (no hook on its loader, --no-hold,
	 * or a lost report), so calls made before now are not recorded. */
	if (trace_attach_path(t, lib->path) > 0 && t->started && !cw_live_is_held(t->live, lib->pid)) {
		cw_debug("\"%s\" of pid %u attached by the trace_rescan, after it was mapped", lib->path, lib->pid);
		t->rescan_late++;
	}
	cw_live_mark(t->live, cw_kdev(lib->dev), lib->ino);
	for (i = 0; i < sc->npids; i++)
		if (sc->pids[i] == lib->pid)
			return 0;
	if (sc->npids < MAX_PIDS)
		sc->pids[sc->npids++] = lib->pid;
	return 0;
}

static void write_process(struct trace *t, uint32_t pid)
{
	struct cw_process_row row;
	char comm[64], cmdline[1024], py[16];

	memset(&row, 0, sizeof(row));
	if (cw_proc_identity(pid, comm, sizeof(comm), cmdline, sizeof(cmdline), &row.ppid))
		return;
	row.pid = pid;
	row.comm = comm;
	row.cmdline = cmdline;
	{
		char cg[CW_CGPATH_MAX + 1];

		if (!cw_pid_cgroup_path(pid, cg, sizeof(cg)))
			cw_cgroup_id_of(cw_cgroup2_root(), cg, &row.cgroup_id);
	}
	cw_proc_ranks(pid, &row.rank, &row.local_rank, &row.world_size);
	row.start_wall_ns = cw_realtime_ns();
	if (!t->python_version[0] && !cw_proc_python_version(pid, py, sizeof(py)))
		snprintf(t->python_version, sizeof(t->python_version), "%s", py);
	cw_writer_process(t->w, &row);
}

/* Every second: find library copies and processes, enroll new pids. */
void trace_rescan(struct trace *t)
{
	struct scan_ctx *sc = calloc(1, sizeof(*sc));
	uint32_t fresh[MAX_PIDS];
	int nfresh = 0, i, ready;

	if (!sc)
		return;
	sc->t = t;
	if (t->o.nlibs == 0) {
		if (!t->o.npids && !t->o.command) {
			cw_discover_all(on_lib, sc);
		} else {
			/* Named processes and their (kernel-tracked) children:
			 * libraries they dlopen'ed since the last scan. The
			 * pending ones too: at start the named pids are only
			 * pending, and their libraries must be attached before
			 * trace says it is tracing. */
			cw_consumer_lock(&t->cons);
			for (i = 0; i < t->nknown && sc->npids < MAX_PIDS; i++)
				sc->pids[sc->npids++] = t->known[i];
			for (i = 0; i < t->npending && sc->npids < MAX_PIDS; i++)
				if (!is_known(t, t->pending[i]))
					sc->pids[sc->npids++] = t->pending[i];
			cw_consumer_unlock(&t->cons);
			for (i = 0; i < sc->npids; i++)
				cw_discover_pid(sc->pids[i], on_lib, sc);
		}
	}
	/* With a tenant filter, discovery enrolls only the tenant's processes
	 * (their sched, I/O and memory records); the checks read /proc, so
	 * they run before the lock. */
	if (!t->o.npids && !t->o.command)
		for (i = 0; i < sc->npids; i++)
			if (!trace_tenant_pid_allowed(t->tenant, sc->pids[i]))
				sc->pids[i] = 0;
	cw_consumer_lock(&t->cons);
	if (!t->o.npids && !t->o.command)
		for (i = 0; i < sc->npids; i++)
			trace_add_pending(t, sc->pids[i]);
	for (i = 0; i < t->npending; i++)
		if (t->nknown < MAX_PIDS && !is_known(t, t->pending[i])) {
			t->known[t->nknown++] = t->pending[i];
			fresh[nfresh++] = t->pending[i];
		}
	t->npending = 0;
	/* A store that cannot take rows now (locked by another process):
	 * the process rows wait, the tracing does not. */
	ready = cw_consumer_store_ready(&t->cons);
	for (i = 0; ready && i < t->nrowless; i++)
		write_process(t, t->rowless[i]);
	if (ready)
		t->nrowless = 0;
	for (i = 0; i < nfresh; i++) {
		if (!cw_kernel_probes_is_tracked(t->kp, fresh[i]))
			cw_kernel_probes_track(t->kp, fresh[i]);
		if (ready)
			write_process(t, fresh[i]);
		else if (t->nrowless < (int)(sizeof(t->rowless) / sizeof(t->rowless[0])))
			t->rowless[t->nrowless++] = fresh[i];
		else
			t->pending_lost++;
		if (t->py)
			trace_python_enroll(t->py, fresh[i]);
	}
	nfresh = 0;
	for (i = 0; !t->python_version[0] && i < t->nknown && nfresh < 16; i++)
		fresh[nfresh++] = t->known[i];
	cw_consumer_unlock(&t->cons);
	/* A launched command runs python only after exec: look again until
	 * one traced process turns out to be CPython. */
	for (i = 0; i < nfresh && !t->python_version[0]; i++) {
		char py[16];

		if (!cw_proc_python_version(fresh[i], py, sizeof(py)))
			snprintf(t->python_version, sizeof(t->python_version), "%s", py);
	}
	free(sc);
}

/* Ends discovery (resuming whatever it stopped), keeping its figures. */
void trace_live_stop(struct trace *t)
{
	if (!t->live)
		return;
	t->live_was_on = 1;
	cw_live_close(t->live, &t->live_last);
	t->live = NULL;
}
