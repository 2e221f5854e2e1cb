/* Names of the explain enums and the helpers rules use to fill a chain. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/chain.h"
#include "analysis/stats.h"
#include "util/timeutil.h"

const char *cw_kind_name(enum cw_kind k)
{
	static const char *const names[CW_KIND_MAX] = {
		[CW_KIND_CPU_PREEMPTION] = "cpu_preemption",
		[CW_KIND_IO_CONTENTION] = "io_contention",
		[CW_KIND_MEMORY_PRESSURE] = "memory_pressure",
		[CW_KIND_COLD_START] = "cold_start",
		[CW_KIND_PERIODIC_ALLOCATOR] = "periodic_allocator",
		[CW_KIND_MEMCPY_BOUND] = "memcpy_bound",
		[CW_KIND_GPU_TIME_SLICING] = "gpu_time_slicing",
		[CW_KIND_THROUGHPUT_DROP] = "throughput_drop",
		[CW_KIND_DATALOADER_STARVATION] = "dataloader_starvation",
		[CW_KIND_STRAGGLER] = "straggler",
		[CW_KIND_NOISY_NEIGHBOUR] = "noisy_neighbour",
		[CW_KIND_CFS_THROTTLING] = "cfs_throttling",
		[CW_KIND_OOM_KILL] = "oom_kill",
		[CW_KIND_NETWORK] = "network",
		[CW_KIND_GRAPH_CHURN] = "graph_churn",
		[CW_KIND_GRAPH_LAUNCH_TAIL] = "graph_launch_tail",
		[CW_KIND_HOST_MEMORY] = "host_memory",
		[CW_KIND_XID_FAULT] = "xid_fault",
		[CW_KIND_THERMAL_THROTTLING] = "thermal_throttling",
		[CW_KIND_POWER_CAPPING] = "power_capping",
		[CW_KIND_GPU_MEMORY_PRESSURE] = "gpu_memory_pressure",
		[CW_KIND_TRAINING_STALL] = "training_stall",
		[CW_KIND_NCCL_STRAGGLER] = "nccl_straggler",
		[CW_KIND_NCCL_HANG] = "nccl_hang",
		[CW_KIND_COMM_BOUND] = "comm_bound",
		[CW_KIND_NCCL_WAIT] = "nccl_wait",
		[CW_KIND_CUDA_ERROR] = "cuda_error",
		[CW_KIND_DEVICE_OOM] = "device_oom",
		[CW_KIND_NCCL_ERROR] = "nccl_error",
		[CW_KIND_INFERENCE_LATENCY] = "inference_latency",
	};
	return (unsigned)k < CW_KIND_MAX ? names[k] : "unknown";
}

const char *cw_severity_name(enum cw_severity s)
{
	switch (s) {
	case CW_SEV_HIGH:
		return "HIGH";
	case CW_SEV_MEDIUM:
		return "MEDIUM";
	default:
		return "LOW";
	}
}

const char *cw_layer_name(enum cw_layer l)
{
	static const char *const names[CW_LAYER_MAX] = {
		"SYSTEM", "HOST", "IO", "NET", "CUDA", "DRIVER", "NCCL", "PYTHON",
	};
	return (unsigned)l < CW_LAYER_MAX ? names[l] : "HOST";
}

enum cw_layer cw_layer_of_source(const char *source)
{
	if (!strcmp(source, "driver"))
		return CW_LAYER_DRIVER;
	if (!strcmp(source, "nccl"))
		return CW_LAYER_NCCL;
	if (!strcmp(source, "io"))
		return CW_LAYER_IO;
	if (!strcmp(source, "net") || !strcmp(source, "http"))
		return CW_LAYER_NET;
	if (!strcmp(source, "python"))
		return CW_LAYER_PYTHON;
	if (!strcmp(source, "system") || !strcmp(source, "mem"))
		return CW_LAYER_SYSTEM;
	if (!strcmp(source, "sched") || !strcmp(source, "proc"))
		return CW_LAYER_HOST;
	return CW_LAYER_CUDA;
}

const char *cw_fix_kind_name(enum cw_fix_kind k)
{
	return k == CW_FIX_ADVICE ? "advice" : k == CW_FIX_CODE ? "code" : "command";
}

static void add_fix(struct cw_chain *c, enum cw_fix_kind kind, const char *fmt, va_list ap)
{
	if (c->nfix >= CW_CHAIN_MAX_FIX)
		return;
	c->fix_kind[c->nfix] = (unsigned char)kind;
	vsnprintf(c->fix[c->nfix++], sizeof(c->fix[0]), fmt, ap);
}

void cw_chain_add_fix(struct cw_chain *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	add_fix(c, CW_FIX_COMMAND, fmt, ap);
	va_end(ap);
}

void cw_chain_add_advice(struct cw_chain *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	add_fix(c, CW_FIX_ADVICE, fmt, ap);
	va_end(ap);
}

void cw_chain_copy_fix(struct cw_chain *c, const struct cw_chain *from, int i)
{
	if (c->nfix >= CW_CHAIN_MAX_FIX || i < 0 || i >= from->nfix)
		return;
	c->fix_kind[c->nfix] = from->fix_kind[i];
	snprintf(c->fix[c->nfix++], sizeof(c->fix[0]), "%s", from->fix[i]);
}

void cw_chain_add_code(struct cw_chain *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	add_fix(c, CW_FIX_CODE, fmt, ap);
	va_end(ap);
}

void cw_chain_add_timeline(struct cw_chain *c, enum cw_layer layer, uint64_t t_ns, const char *fmt, ...)
{
	va_list ap;
	struct cw_timeline_entry *e;

	if (c->ntimeline >= CW_CHAIN_MAX_TIMELINE)
		return;
	e = &c->timeline[c->ntimeline++];
	e->layer = layer;
	e->t_ns = t_ns;
	va_start(ap, fmt);
	vsnprintf(e->text, sizeof(e->text), fmt, ap);
	va_end(ap);
}

void cw_chain_add_evidence(struct cw_chain *c, const char *key, double v, int is_int)
{
	struct cw_evidence *e;

	if (c->nevidence >= CW_CHAIN_MAX_EVIDENCE)
		return;
	e = &c->evidence[c->nevidence++];
	snprintf(e->key, sizeof(e->key), "%s", key);
	e->value = v;
	e->is_int = is_int;
}

/* "train_step() at train.py:95 — cudaStreamSynchronize 159.4ms (expected
 * ~17.8ms): <cause>": where, what and how slow against normal, why. The
 * cause is the summary after its own "<op> p99 ... (...)" head. */
void cw_chain_oneline(const struct cw_chain *c, char *buf, size_t len)
{
	char head[160], where[512], what[160] = "", p99[32], exp[32];
	const char *cause = c->summary, *file = strrchr(c->py_file, '/');
	size_t hl;

	cw_chain_headline(c, head, sizeof(head));
	hl = strlen(head);
	if (!strncmp(c->summary, head, hl) && c->summary[hl] == ':' && c->summary[hl + 1] == ' ')
		cause = c->summary + hl + 2;
	if (c->has_python)
		snprintf(where, sizeof(where), "%s() at %s:%d", c->py_function, file ? file + 1 : c->py_file,
			 c->py_line);
	else if (c->pid)
		snprintf(where, sizeof(where), "pid %lld (%s)", (long long)c->pid, c->comm[0] ? c->comm : "?");
	else
		snprintf(where, sizeof(where), "%s", c->node);
	if (cw_chain_has_latency(c) && c->expected_ns && cause != c->summary) {
		cw_format_duration(c->p99_ns, p99, sizeof(p99));
		cw_format_duration(c->expected_ns, exp, sizeof(exp));
		snprintf(what, sizeof(what), "%s %s (expected ~%s): ", c->op, p99, exp);
	}
	snprintf(buf, len, "%s \xe2\x80\x94 %s%s", where, what, cause); /* an em dash */
}

double cw_chain_evidence_value(const struct cw_chain *c, const char *key, double dflt)
{
	for (int i = 0; i < c->nevidence; i++)
		if (!strcmp(c->evidence[i].key, key))
			return c->evidence[i].value;
	return dflt;
}

void cw_chain_headline(const struct cw_chain *c, char *buf, size_t len)
{
	char p99[32];

	cw_format_duration(c->p99_ns, p99, sizeof(p99));
	if (c->expected_outside) {
		/* Rules write their summary while p50 still holds the expected
		 * latency; explain_op.c then restores the window's p50 and
		 * sets expected_ns: both give the same head. */
		uint64_t e = c->expected_ns ? c->expected_ns : c->p50_ns;
		char exp[32];

		cw_format_duration(e, exp, sizeof(exp));
		snprintf(buf, len, "%s p99 %s (%.1fx the expected ~%s)", c->op, p99,
			 e ? (double)c->p99_ns / (double)e : 0, exp);
	} else
		snprintf(buf, len, "%s p99 %s (%.1fx p50)", c->op, p99, c->tail_ratio);
}

int cw_chain_has_latency(const struct cw_chain *c)
{
	return c->kind != CW_KIND_OOM_KILL && c->p50_ns > 0 && c->p99_ns > 0 && c->tail_ratio > 0;
}

void cw_chain_summary(struct cw_chain *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->summary, sizeof(c->summary), fmt, ap);
	va_end(ap);
}

struct cw_chain *cw_chain_list_push(struct cw_chain_list *l)
{
	if (l->n == l->cap) {
		int nc = l->cap ? l->cap * 2 : 8;
		struct cw_chain *nv = realloc(l->v, (size_t)nc * sizeof(*nv));
		if (!nv)
			return NULL;
		l->v = nv;
		l->cap = nc;
	}
	return &l->v[l->n++];
}

void cw_chain_from_opstat(struct cw_chain *c, const struct cw_opstat *st)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->op, sizeof(c->op), "%s", st->op);
	snprintf(c->source, sizeof(c->source), "%s", st->source);
	snprintf(c->node, sizeof(c->node), "%s", st->node);
	c->count = st->count;
	c->p50_ns = st->p50_ns;
	c->p95_ns = st->p95_ns;
	c->p99_ns = st->p99_ns;
	c->max_ns = st->max_ns;
	c->tail_ratio = st->p50_ns ? (double)st->p99_ns / (double)st->p50_ns : 0;
	c->expected_outside = st->expected_outside;
	c->rank = -1;
	c->culprit.cpu = -1;
}
