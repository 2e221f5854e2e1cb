/* What the consumer thread hands a trace: every raw record (the tap) and
 * every stored row (the observers), for the live view, the live metrics,
 * writer lag, GPU stalls and the --json stream; and the calls still open
 * in the kernel. */
#define _GNU_SOURCE
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf/events.h"
#include "pipeline/ops.h"
#include "metrics/live_metrics.h"
#include "metrics/writer_lag.h"
#include "trace/ras.h"
#include "trace/gpu.h"
#include "trace/python.h"
#include "trace/session.h"
#include "trace/tenant.h"
#include "trace/view.h"
#include "util/timeutil.h"
#include "util/utf8.h"

/* An exec of python3 -> python3.X (pyenv and distributions install the
 * versioned binary and symlink the short names to it). */
static void python_from_exec(struct trace *t, const struct cw_proc *p)
{
	char fn[CW_PATH_LEN + 1], real[PATH_MAX];
	const char *b;
	int minor;

	memcpy(fn, p->filename, CW_PATH_LEN);
	fn[CW_PATH_LEN] = '\0';
	if (!realpath(fn, real))
		return;
	b = strrchr(real, '/');
	b = b ? b + 1 : real;
	if (sscanf(b, "python3.%d", &minor) == 1)
		snprintf(t->python_version, sizeof(t->python_version), "3.%d", minor);
}

/* Consumer thread, lock held: lifecycle records of traced processes. A
 * forked Python child (multiprocessing, DataLoader workers) is Python at
 * once; an exec'd one after its interpreter starts: both are (re)tried. */
static void on_proc(struct trace *t, const struct cw_proc *p)
{
	switch (p->hdr.op) {
	case CW_OP_fork:
		trace_add_pending(t, p->child_pid);
		if (t->py)
			trace_python_enroll(t->py, p->child_pid);
		break;
	case CW_OP_exec:
		if (!t->python_version[0])
			python_from_exec(t, p);
		if (t->py)
			trace_python_enroll(t->py, p->hdr.pid);
		break;
	case CW_OP_exit:
		if (t->py)
			trace_python_exited(t->py, p->child_pid);
		trace_gpu_exited(t->gpu, p->child_pid);
		break;
	default:
		break;
	}
}

/* Consumer thread, lock held: every raw record. */
void trace_tap(void *ctx, const void *data, size_t size)
{
	struct trace *t = ctx;
	const struct cw_hdr *h = data;

	if (size < sizeof(*h))
		return;
	if (t->view)
		cw_trace_view_record(t->view, data, size);
	trace_tenant_tap(t->tenant, data, size);
	if (h->type == CW_REC_CALL || h->type == CW_REC_CALL_ENTRY) {
		t->entries++;
		trace_add_pending(t, h->pid);
	}
	else if (h->type == CW_REC_PROC && size >= sizeof(struct cw_proc))
		on_proc(t, (const struct cw_proc *)data);
}

/* The writer's commit count, the one figure writer lag needs from the
 * writer (metrics/writer_lag.h): the batches cw_writer_get_stats() counts.
 * Lock held. */
uint64_t trace_writer_commits_locked(struct trace *t)
{
	struct cw_writer_stats ws;

	cw_writer_get_stats(t->w, &ws);
	return ws.batches;
}

/* The same from another thread (a scrape). */
int trace_writer_commits(void *ctx, uint64_t *commits)
{
	struct trace *t = ctx;

	cw_consumer_lock(&t->cons);
	*commits = trace_writer_commits_locked(t);
	cw_consumer_unlock(&t->cons);
	return 0;
}

/* Consumer thread, lock held: every stored off-CPU interval. */
void trace_observe_offcpu(void *ctx, const struct cw_offcpu_row *r)
{
	struct trace *t = ctx;

	if (t->metrics)
		cw_live_metrics_offcpu(t->metrics, r);
	if (t->wlag)
		cw_writer_lag_row(t->wlag, r->end_mono_ns, trace_writer_commits_locked(t), cw_monotonic_ns());
}

/* --json: the row as one NDJSON line. */
static void write_json(struct trace *t, const struct cw_event_row *r)
{
	json_t *o = json_pack("{s:I,s:I,s:I,s:i,s:i,s:o,s:s,s:s}", "wall_ns", (json_int_t)r->wall_ns,
			      "mono_ns", (json_int_t)r->mono_ns, "duration_ns", (json_int_t)r->duration_ns,
			      "pid", (int)r->pid, "tid", (int)r->tid, "comm", cw_json_str(r->comm ? r->comm : ""),
			      "source", r->source ? r->source : "", "op", r->op ? r->op : "");
	char *s;
	int i;

	if (!o)
		return;
	if (r->nargs > 0) {
		json_t *a = json_array();

		for (i = 0; i < r->nargs && i < 4; i++)
			json_array_append_new(a, json_integer(r->args[i]));
		json_object_set_new(o, "args", a);
	}
	if (r->has_ret)
		json_object_set_new(o, "ret", json_integer(r->ret));
	if (r->has_bytes)
		json_object_set_new(o, "bytes", json_integer(r->bytes));
	if (r->device >= 0)
		json_object_set_new(o, "device", json_integer(r->device));
	if (r->detail)
		json_object_set_new(o, "detail", cw_json_str(r->detail));
	s = json_dumps(o, JSON_COMPACT);
	if (s) {
		/* One write() per line: a launched command shares the stream,
		 * and its output must not split an event line. */
		size_t len = strlen(s);
		char *line = realloc(s, len + 2);

		if (line) {
			s = line;
			s[len] = '\n';
			if (write(t->o.json_fd, s, len + 1) < 0)
				t->json_write_errors++;
		}
		free(s);
	}
	json_decref(o);
}

/* Consumer thread, lock held: every stored row. */
void trace_observe(void *ctx, const struct cw_event_row *r)
{
	struct trace *t = ctx;

	if (t->view)
		cw_trace_view_observe(t->view, r);
	if (t->metrics)
		cw_live_metrics_event(t->metrics, r);
	if (t->wlag)
		cw_writer_lag_row(t->wlag, r->mono_ns + r->duration_ns, trace_writer_commits_locked(t), cw_monotonic_ns());
	trace_gpu_observe(t->gpu, r);
	trace_ras_observe(t->ras, r);
	if (t->o.json)
		write_json(t, r);
}

static void feed_inflight(void *ctx, const struct cw_call_entry *e)
{
	struct trace *t = ctx;

	cw_consumer_feed(&t->cons, e, sizeof(*e));
}

/* Calls open in the kernel since before cutoff become entries in the
 * pipeline, which stores them as unfinished when they stay open past the
 * consumer's max_open_ns or at the end. */
void trace_take_inflight(struct trace *t, uint64_t cutoff_mono_ns)
{
	if (t->cp)
		cw_cuda_probes_take_inflight(t->cp, cutoff_mono_ns, feed_inflight, t);
}

struct open_call_list {
	uint32_t *tids;
	const char **ops;
	uint64_t *since;
	int n, max;
};

static void open_call_seen(void *ctx, const struct cw_call_entry *e)
{
	struct open_call_list *oc = ctx;

	if (oc->n == oc->max)
		return;
	oc->tids[oc->n] = e->hdr.tid;
	oc->ops[oc->n] = cw_op_name(e->hdr.op);
	oc->since[oc->n] = e->hdr.ts_ns;
	oc->n++;
}

/* trace_gpu's view of the calls a stalled process is inside. */
int trace_open_calls(void *ctx, uint32_t pid, uint32_t *tids, const char **ops, uint64_t *since, int max)
{
	struct trace *t = ctx;
	struct open_call_list oc = {tids, ops, since, 0, max};

	if (!t->cp || cw_cuda_probes_peek_inflight(t->cp, pid, open_call_seen, &oc) < 0)
		return 0;
	return oc.n;
}
