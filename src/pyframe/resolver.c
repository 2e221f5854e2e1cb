#include "pyframe/resolver.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pyframe/attribute.h"
#include "pyframe/framewalk.h"
#include "pyframe/linetable.h"
#include "pyframe/pycode.h"

#define MAX_PROCS 256
#define CACHE_BITS 14
#define CACHE_SIZE (1u << CACHE_BITS)
#define RETRY_NS 1000000000ull /* a failed attach is retried after 1 s */

struct proc_slot {
	uint32_t pid;
	int state; /* 0 free, 1 attached, -errno failed */
	uint64_t failed_at;
	char why[192];
	struct cw_py_proc proc;
};

struct code_entry {
	uint32_t pid;
	uint64_t code;
	uint64_t checked_at;
	struct cw_py_code c;
	/* one-entry memo: frames in a loop resolve the same lasti again */
	uint32_t last_lasti;
	int last_line;
};

/* The last attribution per process: calls from a native thread come in
 * bursts, and the waiting thread's stack does not change within one. */
#define ATTR_SLOTS 16
#define ATTR_TTL_NS 5000000ull
struct attr_slot {
	uint32_t pid, via;
	uint64_t at;
	uint32_t pytids[64]; /* threads with Python frames at that time */
	int npytids;
	struct cw_pystack s;
};

struct cw_pyres {
	struct attr_slot attr[ATTR_SLOTS];
	struct proc_slot procs[MAX_PROCS];
	/* direct-mapped cache: a collision evicts, which bounds memory at
	 * CACHE_SIZE code objects (each with its line table, <= 64 KiB) */
	struct code_entry *cache;
	uint64_t revalidate_ns;
	struct cw_pyres_stats st;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int cw_pyres_new(struct cw_pyres **out)
{
	struct cw_pyres *r = calloc(1, sizeof(*r));

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->cache = calloc(CACHE_SIZE, sizeof(*r->cache));
	if (!r->cache) {
		free(r);
		return -ENOMEM;
	}
	r->revalidate_ns = 100000000ull;
	*out = r;
	return 0;
}

static void entry_clear(struct code_entry *e)
{
	cw_py_code_release(&e->c);
	memset(e, 0, sizeof(*e));
}

void cw_pyres_free(struct cw_pyres *r)
{
	uint32_t i;

	if (!r)
		return;
	for (i = 0; i < CACHE_SIZE; i++)
		cw_py_code_release(&r->cache[i].c);
	free(r->cache);
	free(r);
}

static int resolve_cb(void *ctx, uint32_t pid, uint64_t code, uint32_t lasti, struct cw_py_location *out)
{
	return cw_pyres_resolve(ctx, pid, code, lasti, out);
}

int cw_pyres_attribute(struct cw_pyres *r, uint32_t pid, uint32_t tid, struct cw_pystack *out, uint32_t *via)
{
	struct attr_slot *a = &r->attr[pid % ATTR_SLOTS];
	struct cw_py_thread th[64];
	struct cw_py_frame fr[CW_PY_MAX_FRAMES];
	struct cw_py_proc *p;
	uint64_t now = now_ns();
	int nt, i, w, n, trunc;

	*via = 0;
	if (a->pid != pid || now - a->at >= ATTR_TTL_NS) {
		p = cw_pyres_proc(r, pid, NULL, 0);
		if (!p)
			return 0;
		memset(a, 0, sizeof(*a));
		a->pid = pid;
		a->at = now;
		nt = cw_py_threads(p, th, 64);
		for (i = 0; i < nt; i++)
			if (th[i].frame && th[i].tid)
				a->pytids[a->npytids++] = th[i].tid;
		w = nt > 0 ? cw_py_waiting_thread(pid, 0, th, nt, cw_py_blocked_in_futex) : -1;
		if (w >= 0) {
			n = cw_py_walk(p, th[w].frame, fr, CW_PY_MAX_FRAMES, &trunc);
			if (n > 0) {
				memcpy(a->s.frames, fr, (size_t)n * sizeof(fr[0]));
				a->s.nframes = (uint32_t)n;
				a->s.truncated = (uint32_t)trunc;
				a->via = th[w].tid;
			}
		}
	}
	for (i = 0; i < a->npytids; i++)
		if (a->pytids[i] == tid)
			return 0; /* the caller runs Python itself */
	if (!a->via || a->via == tid)
		return 0;
	memcpy(out->frames, a->s.frames, a->s.nframes * sizeof(a->s.frames[0]));
	out->nframes = a->s.nframes;
	out->truncated = a->s.truncated;
	*via = a->via;
	return (int)a->s.nframes;
}

static int attribute_cb(void *ctx, uint32_t pid, uint32_t tid, struct cw_pystack *out, uint32_t *via)
{
	return cw_pyres_attribute(ctx, pid, tid, out, via);
}

void cw_pyres_as_resolver(struct cw_pyres *r, struct cw_py_resolver *out)
{
	out->resolve = resolve_cb;
	out->attribute = attribute_cb;
	out->ctx = r;
}

void cw_pyres_set_revalidate_ns(struct cw_pyres *r, uint64_t ns)
{
	r->revalidate_ns = ns;
}

static struct proc_slot *slot_for(struct cw_pyres *r, uint32_t pid)
{
	struct proc_slot *s = &r->procs[pid % MAX_PROCS];

	if (s->pid != pid || !s->state) {
		memset(s, 0, sizeof(*s));
		s->pid = pid;
	}
	return s;
}

struct cw_py_proc *cw_pyres_proc(struct cw_pyres *r, uint32_t pid, char *why, size_t whylen)
{
	struct proc_slot *s = slot_for(r, pid);
	uint64_t now;

	if (s->state == 1)
		return &s->proc;
	now = now_ns();
	if (s->state < 0 && now - s->failed_at < RETRY_NS) {
		if (why)
			snprintf(why, whylen, "%s", s->why);
		return NULL;
	}
	s->state = cw_py_proc_attach(&s->proc, (pid_t)pid, s->why, sizeof(s->why));
	if (!s->state)
		s->state = 1;
	else if (s->state > 0)
		s->state = -EINVAL;
	if (s->state == 1)
		return &s->proc;
	s->failed_at = now;
	if (why)
		snprintf(why, whylen, "%s", s->why);
	return NULL;
}

void cw_pyres_forget(struct cw_pyres *r, uint32_t pid)
{
	struct proc_slot *s = &r->procs[pid % MAX_PROCS];
	uint32_t i;

	if (s->pid == pid)
		memset(s, 0, sizeof(*s));
	for (i = 0; i < CACHE_SIZE; i++)
		if (r->cache[i].pid == pid && r->cache[i].code)
			entry_clear(&r->cache[i]);
}

void cw_pyres_retry(struct cw_pyres *r, uint32_t pid)
{
	struct proc_slot *s = &r->procs[pid % MAX_PROCS];

	if (s->pid == pid && s->state < 0)
		memset(s, 0, sizeof(*s));
}

static uint32_t hash_key(uint32_t pid, uint64_t code)
{
	uint64_t h = (code >> 3) * 0x9e3779b97f4a7c15ull ^ (uint64_t)pid * 0xc2b2ae3d27d4eb4full;

	return (uint32_t)(h >> (64 - CACHE_BITS));
}

int cw_pyres_resolve(struct cw_pyres *r, uint32_t pid, uint64_t code, uint32_t lasti, struct cw_py_location *out)
{
	struct code_entry *e = &r->cache[hash_key(pid, code)];
	struct cw_py_proc *p;
	int line, err;

	p = cw_pyres_proc(r, pid, NULL, 0);
	if (!p) {
		r->st.errors++;
		return -ENOENT;
	}
	if (e->code == code && e->pid == pid) {
		uint64_t now = r->revalidate_ns ? now_ns() : 0;

		if (!r->revalidate_ns || now - e->checked_at >= r->revalidate_ns) {
			struct cw_py_code_fp fp;

			r->st.revalidations++;
			err = cw_py_code_fingerprint(p, code, &fp);
			if (err || memcmp(&fp, &e->c.fp, sizeof(fp)) != 0) {
				r->st.reused++;
				entry_clear(e);
				goto miss;
			}
			e->checked_at = now;
		}
		r->st.hits++;
		goto found;
	}
miss:
	r->st.misses++;
	if (e->code)
		entry_clear(e);
	err = cw_py_code_read(p, code, &e->c);
	if (err) {
		memset(e, 0, sizeof(*e));
		r->st.errors++;
		return err;
	}
	e->pid = pid;
	e->code = code;
	e->checked_at = now_ns();
	e->last_lasti = UINT32_MAX - 1;
found:
	if (e->last_lasti == lasti) {
		line = e->last_line;
	} else {
		line = cw_linetable_line(p->off.minor, e->c.linetable, e->c.linetable_len, e->c.fp.firstlineno,
					 lasti == UINT32_MAX ? -1 : (int64_t)lasti);
		if (line < 0)
			line = 0; /* a line table that does not cover lasti: name the frame, no line */
		e->last_lasti = lasti;
		e->last_line = line;
	}
	snprintf(out->file, sizeof(out->file), "%s", e->c.file);
	snprintf(out->function, sizeof(out->function), "%s", e->c.function);
	out->line = line;
	return 0;
}
