#include "pyframe/pystack_loader.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyframe/framewalk.h"
#include "pyframe/pycode.h"

#define MAX_PROCS 256
#define MAX_TIDS_PER_PROC CW_PY_MAX_THREADS

struct lproc {
	struct cw_py_proc proc;
	uint32_t *tids; /* TIDs currently in cw_py_tstate for this process */
	int ntids;
};

struct cw_pystack_loader {
	int procs_fd, tstate_fd;
	struct lproc *procs[MAX_PROCS];
	int nprocs;
	struct cw_py_thread th[CW_PY_MAX_THREADS];
	cw_pystack_attached_fn on_attached;
	void *on_attached_ctx;
};

void cw_pystack_loader_on_attached(struct cw_pystack_loader *l, cw_pystack_attached_fn fn, void *ctx)
{
	l->on_attached = fn;
	l->on_attached_ctx = ctx;
}

int cw_pystack_loader_new(struct cw_pystack_loader **out, int procs_map_fd, int tstate_map_fd)
{
	struct cw_pystack_loader *l = calloc(1, sizeof(*l));

	*out = NULL;
	if (!l)
		return -ENOMEM;
	l->procs_fd = procs_map_fd;
	l->tstate_fd = tstate_map_fd;
	*out = l;
	return 0;
}

static void drop(struct cw_pystack_loader *l, int i)
{
	struct lproc *lp = l->procs[i];
	uint32_t pid = (uint32_t)lp->proc.pid;
	int k;

	bpf_map_delete_elem(l->procs_fd, &pid);
	for (k = 0; k < lp->ntids; k++)
		bpf_map_delete_elem(l->tstate_fd, &lp->tids[k]);
	free(lp->tids);
	free(lp);
	l->procs[i] = l->procs[--l->nprocs];
}

void cw_pystack_loader_free(struct cw_pystack_loader *l)
{
	if (!l)
		return;
	while (l->nprocs)
		drop(l, l->nprocs - 1);
	free(l);
}

/* The BPF view of a process's offsets (exposed for tests). */
static void cw_pystack_bpf_proc_from(const struct cw_py_proc *p, struct cw_py_bpf_proc *out)
{
	const struct cw_py_offsets *o = &p->off;

	memset(out, 0, sizeof(*out));
	out->py_version = o->version_hex ? o->version_hex >> 16 : (3u << 8) | (uint32_t)o->minor;
	out->frame_kind = o->frame_kind;
	out->ts_frame = o->ts_frame;
	out->cframe_current = o->cframe_current;
	out->fr_back = o->fr_back;
	out->fr_code = o->fr_code;
	out->fr_lasti = o->fr_lasti;
	out->fr_owner = o->fr_owner;
	out->co_code_adaptive = o->co_code_adaptive;
	out->ob_type = o->ob_type;
	out->code_type = p->code_type;
	out->code_mask = o->code_mask;
	out->fr_tlbc_index = o->fr_tlbc_index;
	out->co_tlbc = o->co_tlbc;
}

/* Learns &PyCode_Type from the first verified code object on any thread's
 * stack, so BPF can skip non-code executables (3.13) by one compare. */
static void learn_code_type(struct cw_pystack_loader *l, struct cw_py_proc *p, int nt)
{
	struct cw_py_frame fr[4];
	int i, trunc;

	for (i = 0; i < nt && !p->code_type; i++)
		if (l->th[i].frame)
			(void)cw_py_walk(p, l->th[i].frame, fr, 4, &trunc);
}

static int sync_threads(struct cw_pystack_loader *l, struct lproc *lp)
{
	int nt = cw_py_threads(&lp->proc, l->th, CW_PY_MAX_THREADS), i, k, kept = 0;
	uint32_t *tids;

	if (nt < 0)
		return nt;
	tids = malloc(((size_t)nt + 1) * sizeof(*tids));
	if (!tids)
		return -ENOMEM;
	for (i = 0; i < nt; i++) {
		uint64_t ts = l->th[i].tstate;
		uint32_t tid = l->th[i].tid;

		if (!tid || bpf_map_update_elem(l->tstate_fd, &tid, &ts, BPF_ANY))
			continue;
		tids[kept++] = tid;
	}
	/* threads that left the interpreter's list */
	for (k = 0; k < lp->ntids; k++) {
		int still = 0;

		for (i = 0; i < kept && !still; i++)
			still = tids[i] == lp->tids[k];
		if (!still)
			bpf_map_delete_elem(l->tstate_fd, &lp->tids[k]);
	}
	free(lp->tids);
	lp->tids = tids;
	lp->ntids = kept;
	if (!lp->proc.code_type) {
		struct cw_py_bpf_proc bp;
		uint32_t pid = (uint32_t)lp->proc.pid;

		learn_code_type(l, &lp->proc, nt);
		if (lp->proc.code_type) {
			cw_pystack_bpf_proc_from(&lp->proc, &bp);
			bpf_map_update_elem(l->procs_fd, &pid, &bp, BPF_ANY);
		}
	}
	return kept;
}

int cw_pystack_loader_add(struct cw_pystack_loader *l, pid_t pid, char *why, size_t whylen)
{
	struct cw_py_bpf_proc bp;
	struct lproc *lp;
	uint32_t key = (uint32_t)pid;
	int i, err;

	for (i = 0; i < l->nprocs; i++)
		if (l->procs[i]->proc.pid == pid)
			return sync_threads(l, l->procs[i]) < 0 ? -ESRCH : 0;
	if (l->nprocs == MAX_PROCS) {
		snprintf(why, whylen, "too many python processes (%d)", MAX_PROCS);
		return -ENOSPC;
	}
	lp = calloc(1, sizeof(*lp));
	if (!lp)
		return -ENOMEM;
	err = cw_py_proc_attach(&lp->proc, pid, why, whylen);
	if (err) {
		free(lp);
		return err;
	}
	if (l->on_attached)
		l->on_attached(l->on_attached_ctx, pid);
	err = sync_threads(l, lp);
	if (err < 0) {
		snprintf(why, whylen, "cannot read the thread list of process %d", (int)pid);
		free(lp->tids);
		free(lp);
		return err;
	}
	cw_pystack_bpf_proc_from(&lp->proc, &bp);
	if (bpf_map_update_elem(l->procs_fd, &key, &bp, BPF_ANY)) {
		err = -errno;
		snprintf(why, whylen, "cannot update the python offsets map (%s)", strerror(-err));
		for (i = 0; i < lp->ntids; i++)
			bpf_map_delete_elem(l->tstate_fd, &lp->tids[i]);
		free(lp->tids);
		free(lp);
		return err;
	}
	l->procs[l->nprocs++] = lp;
	return 0;
}

int cw_pystack_loader_refresh(struct cw_pystack_loader *l)
{
	int i = 0, total = 0;

	while (i < l->nprocs) {
		int n = sync_threads(l, l->procs[i]);

		if (n < 0) {
			drop(l, i); /* gone or no longer readable */
			continue;
		}
		total += n;
		i++;
	}
	return total;
}

void cw_pystack_loader_remove(struct cw_pystack_loader *l, pid_t pid)
{
	for (int i = 0; i < l->nprocs; i++) {
		if (l->procs[i]->proc.pid == pid) {
			drop(l, i);
			return;
		}
	}
}
