/* Live metrics of a running trace session (see live_metrics.h). */
#define _GNU_SOURCE
#include "metrics/live_metrics.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/call_errors.h"
#include "metrics/prom_text.h"

#define MAX_PROCS 1024
#define HASH_SLOTS (2 * CW_LIVE_MAX_SERIES)
#define OTHER "other"

/* Failing calls of a series by code (gpu/call_errors.h): the first
 * CODES_PER_SERIES distinct codes, the rest as one "other". */
#define CODES_PER_SERIES 4

struct series {
	uint32_t pid; /* 0: the fold of everything past the cap */
	char source[16];
	char op[64];
	uint64_t buckets[CW_PROM_BUCKETS + 1];
	uint64_t count, sum_ns, errors;
	struct {
		int64_t code;
		uint64_t n;
	} fails[CODES_PER_SERIES];
	uint64_t fails_other;
};

struct proc {
	uint32_t pid;
	uint64_t cgroup_id; /* of its latest row; 0 unknown */
	char comm[16];
	uint64_t calls;
	uint64_t last_cuda_mono_ns; /* 0: no CUDA call yet */
	uint64_t offcpu_ns[2];      /* preempted, blocked */
};

/* The tenant labels of one cgroup. */
struct tenant {
	uint64_t cgroup_id;
	char container[24], pod[128], ns[64];
};

struct cw_live_metrics {
	pthread_mutex_t lock;
	unsigned max_processes;
	struct series *series;
	unsigned nseries;
	int32_t *slots; /* open addressing into series; -1 empty */
	struct proc procs[MAX_PROCS];
	unsigned nprocs;
	struct proc overflow; /* processes past MAX_PROCS */
	struct tenant *tenants; /* CW_LIVE_MAX_TENANTS */
	unsigned ntenants;
};

int cw_live_metrics_new(struct cw_live_metrics **out, unsigned max_processes)
{
	struct cw_live_metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->series = calloc(CW_LIVE_MAX_SERIES + 1, sizeof(*m->series));
	m->slots = malloc(HASH_SLOTS * sizeof(*m->slots));
	m->tenants = calloc(CW_LIVE_MAX_TENANTS, sizeof(*m->tenants));
	if (!m->series || !m->slots || !m->tenants) {
		free(m->series);
		free(m->slots);
		free(m->tenants);
		free(m);
		return -ENOMEM;
	}
	memset(m->slots, 0xff, HASH_SLOTS * sizeof(*m->slots));
	pthread_mutex_init(&m->lock, NULL);
	m->max_processes = max_processes ? max_processes : CW_LIVE_DEFAULT_PROCESSES;
	snprintf(m->overflow.comm, sizeof(m->overflow.comm), "%s", OTHER);
	*out = m;
	return 0;
}

void cw_live_metrics_free(struct cw_live_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->lock);
	free(m->series);
	free(m->slots);
	free(m->tenants);
	free(m);
}

void cw_live_metrics_tenant(struct cw_live_metrics *m, uint64_t cgroup_id, const char *container,
			    const char *pod, const char *ns)
{
	struct tenant *t = NULL;

	if (!cgroup_id || (!(container && *container) && !(pod && *pod)))
		return;
	pthread_mutex_lock(&m->lock);
	for (unsigned i = 0; i < m->ntenants && !t; i++)
		if (m->tenants[i].cgroup_id == cgroup_id)
			t = &m->tenants[i];
	if (!t && m->ntenants < CW_LIVE_MAX_TENANTS)
		t = &m->tenants[m->ntenants++];
	if (t) {
		t->cgroup_id = cgroup_id;
		/* An id as `docker ps` shows it (OTLP reads these too). */
		if (container && !strncmp(container, "slurm-job-", 10))
			snprintf(t->container, sizeof(t->container), "%s", container);
		else
			snprintf(t->container, sizeof(t->container), "%.12s", container ? container : "");
		snprintf(t->pod, sizeof(t->pod), "%s", pod ? pod : "");
		snprintf(t->ns, sizeof(t->ns), "%s", ns ? ns : "");
	}
	pthread_mutex_unlock(&m->lock);
}

static uint64_t hash_key(uint32_t pid, const char *source, const char *op)
{
	uint64_t h = 1469598103934665603ULL ^ pid;

	for (; *source; source++)
		h = (h ^ (unsigned char)*source) * 1099511628211ULL;
	h = (h ^ '/') * 1099511628211ULL;
	for (; *op; op++)
		h = (h ^ (unsigned char)*op) * 1099511628211ULL;
	return h;
}

/* Lock held. The series of (pid, source, op); past the cap, the one fold
 * series kept after the table (pid 0, op "other"). */
static struct series *series_of(struct cw_live_metrics *m, uint32_t pid, const char *source,
				const char *op)
{
	uint64_t h = hash_key(pid, source, op);
	unsigned i, probe;
	struct series *s;

	for (probe = 0; probe < HASH_SLOTS; probe++) {
		i = (unsigned)((h + probe) % HASH_SLOTS);
		if (m->slots[i] < 0)
			break;
		s = &m->series[m->slots[i]];
		if (s->pid == pid && !strncmp(s->source, source, sizeof(s->source) - 1) &&
		    !strncmp(s->op, op, sizeof(s->op) - 1))
			return s;
	}
	if (m->nseries >= CW_LIVE_MAX_SERIES || probe == HASH_SLOTS) {
		s = &m->series[CW_LIVE_MAX_SERIES];
		if (!s->source[0]) {
			snprintf(s->source, sizeof(s->source), "%s", OTHER);
			snprintf(s->op, sizeof(s->op), "%s", OTHER);
		}
		return s;
	}
	s = &m->series[m->nseries];
	m->slots[i] = (int32_t)m->nseries++;
	s->pid = pid;
	snprintf(s->source, sizeof(s->source), "%s", source);
	snprintf(s->op, sizeof(s->op), "%s", op);
	return s;
}

/* Lock held. Linear: at most MAX_PROCS entries, and a process is looked up
 * once per stored row only after its previous lookup missed the last-hit
 * cache below. */
static struct proc *proc_of(struct cw_live_metrics *m, uint32_t pid, const char *comm, int rename)
{
	static __thread unsigned last;
	struct proc *p;
	unsigned i;

	if (last < m->nprocs && m->procs[last].pid == pid)
		p = &m->procs[last];
	else
		for (i = 0, p = NULL; i < m->nprocs && !p; i++)
			if (m->procs[i].pid == pid) {
				last = i;
				p = &m->procs[i];
			}
	if (p) {
		/* exec renames a process, and kernel rows of its first moments
		 * (fork, page allocations) carry the parent's name and may be read
		 * from their ring after its calls: the name of its latest CUDA
		 * call wins (rename != 0). */
		if (rename && comm && *comm && strncmp(p->comm, comm, sizeof(p->comm) - 1))
			snprintf(p->comm, sizeof(p->comm), "%s", comm);
		return p;
	}
	if (m->nprocs >= MAX_PROCS)
		return &m->overflow;
	p = &m->procs[m->nprocs];
	last = m->nprocs++;
	p->pid = pid;
	snprintf(p->comm, sizeof(p->comm), "%s", comm && *comm ? comm : "?");
	return p;
}

static int is_cuda_source(const char *s)
{
	return !strcmp(s, "cuda") || !strcmp(s, "driver") || !strcmp(s, "nccl") ||
	       !strcmp(s, "graph");
}

static void count_failure(struct series *s, int64_t code, uint64_t n)
{
	for (int i = 0; i < CODES_PER_SERIES; i++)
		if (s->fails[i].n && s->fails[i].code == code) {
			s->fails[i].n += n;
			return;
		} else if (!s->fails[i].n) {
			s->fails[i].code = code;
			s->fails[i].n = n;
			return;
		}
	s->fails_other += n;
}

void cw_live_metrics_event(struct cw_live_metrics *m, const struct cw_event_row *r)
{
	const char *source = r->source ? r->source : "";
	const char *op = r->op ? r->op : "";
	struct series *s;
	struct proc *p;

	pthread_mutex_lock(&m->lock);
	s = series_of(m, r->pid, source, op);
	s->buckets[cw_prom_bucket(r->duration_ns)]++;
	s->count++;
	s->sum_ns += r->duration_ns;
	if (r->has_ret && r->ret != 0) {
		s->errors++;
		if (is_cuda_source(source) &&
		    cw_call_error_family(cw_error_api_of_op(op), r->ret) != CW_ERRF_NONE)
			count_failure(s, r->ret, 1);
	}
	p = proc_of(m, r->pid, r->comm, is_cuda_source(source));
	p->calls++;
	if (r->cgroup_id)
		p->cgroup_id = r->cgroup_id;
	if (is_cuda_source(source) && r->mono_ns + r->duration_ns > p->last_cuda_mono_ns)
		p->last_cuda_mono_ns = r->mono_ns + r->duration_ns;
	pthread_mutex_unlock(&m->lock);
}

void cw_live_metrics_folded(struct cw_live_metrics *m, uint32_t pid, const char *source, const char *op,
			    const struct cw_hist *h)
{
	struct series *s;
	struct proc *p;

	if (!h->count)
		return;
	pthread_mutex_lock(&m->lock);
	s = series_of(m, pid, source, op);
	for (unsigned b = 0; b < CW_HIST_BUCKETS; b++)
		if (h->buckets[b])
			/* Exact: a log-linear bucket lies within one power of
			 * two, and a Prometheus bucket holds [2^m, 2^(m+1)). */
			s->buckets[cw_prom_bucket(cw_hist_bucket_low(b))] += h->buckets[b];
	s->count += h->count;
	s->sum_ns += h->sum_ns;
	/* Not a rename: the process's name comes from its rows (its first
	 * calls always keep theirs). */
	p = proc_of(m, pid, NULL, 0);
	p->calls += h->count;
	pthread_mutex_unlock(&m->lock);
}

void cw_live_metrics_offcpu(struct cw_live_metrics *m, const struct cw_offcpu_row *r)
{
	struct proc *p;

	if (r->end_mono_ns <= r->start_mono_ns)
		return;
	pthread_mutex_lock(&m->lock);
	p = proc_of(m, r->pid, r->comm, 0);
	p->offcpu_ns[r->reason && !strcmp(r->reason, "preempted") ? 0 : 1] +=
		r->end_mono_ns - r->start_mono_ns;
	pthread_mutex_unlock(&m->lock);
}

/* ---- rendering ---- */

struct out_series {
	const char *process; /* points into a proc copy or OTHER */
	const struct tenant *tenant; /* into the snapshot's copy; NULL unknown */
	struct series s;
};

static const char *tenant_field(const struct tenant *t, int k)
{
	if (!t)
		return "";
	return k == 0 ? t->container : k == 1 ? t->pod : t->ns;
}

static int by_calls_desc(const void *a, const void *b)
{
	const struct proc *x = a, *y = b;

	if (x->calls != y->calls)
		return x->calls < y->calls ? 1 : -1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int by_labels(const void *a, const void *b)
{
	const struct out_series *x = a, *y = b;
	int c = strcmp(x->s.source, y->s.source);

	if (!c)
		c = strcmp(x->s.op, y->s.op);
	if (!c)
		c = strcmp(x->process, y->process);
	for (int k = 0; k < 3 && !c; k++)
		c = strcmp(tenant_field(x->tenant, k), tenant_field(y->tenant, k));
	return c;
}

/* Appends ,container="..",pod="..",namespace=".." for those of t known. */
static void tenant_labels(struct strbuf *sb, const struct tenant *t)
{
	if (t)
		cw_prom_tenant_labels(sb, t->container, t->pod, t->ns);
}

/* Appends {node="..",process=".."[,container/pod/namespace][,source="..",op=".."]
 * without the closing brace, so a caller can add le or pid before it. */
static void labels(struct strbuf *sb, const char *node, const char *process, const struct tenant *t,
		   const char *source, const char *op)
{
	strbuf_adds(sb, "{node=\"");
	cw_prom_escape_label(sb, node);
	strbuf_adds(sb, "\",process=\"");
	cw_prom_escape_label(sb, process);
	strbuf_addch(sb, '"');
	tenant_labels(sb, t);
	if (source) {
		strbuf_adds(sb, ",source=\"");
		cw_prom_escape_label(sb, source);
		strbuf_adds(sb, "\",op=\"");
		cw_prom_escape_label(sb, op);
		strbuf_addch(sb, '"');
	}
}

/* The index of pid among the top n named processes, or -1. */
static int named(const struct proc *top, unsigned n, uint32_t pid)
{
	for (unsigned i = 0; i < n; i++)
		if (top[i].pid == pid)
			return (int)i;
	return -1;
}

static void failure_line(struct strbuf *sb, const char *node, const struct out_series *o, const char *error,
			 const char *family, uint64_t n)
{
	strbuf_adds(sb, "causeway_op_failures_total");
	labels(sb, node, o->process, o->tenant, o->s.source, o->s.op);
	strbuf_adds(sb, ",error=\"");
	cw_prom_escape_label(sb, error);
	strbuf_addf(sb, "\",family=\"%s\"} %llu\n", family, (unsigned long long)n);
}

/* Failing CUDA, driver and NCCL calls by error code (not the codes that
 * report a state, such as cudaErrorNotReady): only series that failed. */
static void render_failures(struct strbuf *sb, const char *node, const struct out_series *o, unsigned n)
{
	strbuf_adds(sb, "# HELP causeway_op_failures_total Traced CUDA, driver and NCCL calls that failed, "
			"by error code and family, per process.\n# TYPE causeway_op_failures_total counter\n");
	for (unsigned j = 0; j < n; j++) {
		enum cw_error_api api = cw_error_api_of_op(o[j].s.op);

		for (int k = 0; k < CODES_PER_SERIES && o[j].s.fails[k].n; k++) {
			char name[64];

			cw_call_error_format(api, o[j].s.fails[k].code, name, sizeof(name));
			failure_line(sb, node, &o[j], name,
				     cw_error_family_name(cw_call_error_family(api, o[j].s.fails[k].code)),
				     o[j].s.fails[k].n);
		}
		if (o[j].s.fails_other)
			failure_line(sb, node, &o[j], "other", "other", o[j].s.fails_other);
	}
}

static void render_histograms(struct strbuf *sb, const char *node, struct out_series *o,
			      unsigned n)
{
	unsigned i, j, b;

	strbuf_adds(sb, "# HELP causeway_op_duration_seconds Duration of traced calls in this "
			"trace session, per process (top N by calls, the rest as \"other\").\n"
			"# TYPE causeway_op_duration_seconds histogram\n");
	for (i = 0; i < n; i++) {
		uint64_t cum = 0;

		for (b = 0; b <= CW_PROM_BUCKETS; b++) {
			cum += o[i].s.buckets[b];
			strbuf_adds(sb, "causeway_op_duration_seconds_bucket");
			labels(sb, node, o[i].process, o[i].tenant, o[i].s.source, o[i].s.op);
			if (b < CW_PROM_BUCKETS)
				strbuf_addf(sb, ",le=\"%.9g\"} %llu\n", cw_prom_bucket_le(b),
					    (unsigned long long)cum);
			else
				strbuf_addf(sb, ",le=\"+Inf\"} %llu\n", (unsigned long long)cum);
		}
		strbuf_adds(sb, "causeway_op_duration_seconds_sum");
		labels(sb, node, o[i].process, o[i].tenant, o[i].s.source, o[i].s.op);
		strbuf_addf(sb, "} %.9g\n", (double)o[i].s.sum_ns / 1e9);
		strbuf_adds(sb, "causeway_op_duration_seconds_count");
		labels(sb, node, o[i].process, o[i].tenant, o[i].s.source, o[i].s.op);
		strbuf_addf(sb, "} %llu\n", (unsigned long long)o[i].s.count);
	}
	strbuf_adds(sb, "# HELP causeway_op_errors_total Traced calls that returned an error "
			"code, per process.\n# TYPE causeway_op_errors_total counter\n");
	for (j = 0; j < n; j++) {
		strbuf_adds(sb, "causeway_op_errors_total");
		labels(sb, node, o[j].process, o[j].tenant, o[j].s.source, o[j].s.op);
		strbuf_addf(sb, "} %llu\n", (unsigned long long)o[j].s.errors);
	}
	render_failures(sb, node, o, n);
}

/* Merges adjacent entries with equal labels (o sorted by_labels). */
static unsigned merge_equal(struct out_series *o, unsigned n)
{
	unsigned w = 0, i, b;

	for (i = 0; i < n; i++) {
		if (w && !by_labels(&o[w - 1], &o[i])) {
			struct series *d = &o[w - 1].s;

			for (b = 0; b <= CW_PROM_BUCKETS; b++)
				d->buckets[b] += o[i].s.buckets[b];
			d->count += o[i].s.count;
			d->sum_ns += o[i].s.sum_ns;
			d->errors += o[i].s.errors;
			for (b = 0; b < CODES_PER_SERIES && o[i].s.fails[b].n; b++)
				count_failure(d, o[i].s.fails[b].code, o[i].s.fails[b].n);
			d->fails_other += o[i].s.fails_other;
			continue;
		}
		o[w++] = o[i];
	}
	return w;
}

static int pid_alive(uint32_t pid)
{
	char path[32];

	snprintf(path, sizeof(path), "/proc/%u", pid);
	return access(path, F_OK) == 0;
}

static void render_processes(struct strbuf *sb, const char *node, const struct proc *top,
			     const struct tenant *const *tt, unsigned ntop, const struct proc *rest, uint64_t now)
{
	static const char *const reason[2] = { "preempted", "blocked" };
	unsigned i, r;

	strbuf_adds(sb, "# HELP causeway_process_cuda_idle_seconds Seconds since the process's "
			"last CUDA, driver or NCCL call returned (the training-stall signal); "
			"live processes that made at least one call.\n"
			"# TYPE causeway_process_cuda_idle_seconds gauge\n");
	for (i = 0; i < ntop; i++) {
		if (!top[i].last_cuda_mono_ns || !pid_alive(top[i].pid))
			continue;
		strbuf_adds(sb, "causeway_process_cuda_idle_seconds{node=\"");
		cw_prom_escape_label(sb, node);
		strbuf_addf(sb, "\",pid=\"%u\",process=\"", top[i].pid);
		cw_prom_escape_label(sb, top[i].comm);
		strbuf_addch(sb, '"');
		tenant_labels(sb, tt[i]);
		strbuf_addf(sb, "} %.3f\n",
			    now > top[i].last_cuda_mono_ns ?
				    (double)(now - top[i].last_cuda_mono_ns) / 1e9 : 0.0);
	}
	strbuf_adds(sb, "# HELP causeway_offcpu_seconds_total Time traced threads spent off CPU "
			"in this session, by reason, per process.\n"
			"# TYPE causeway_offcpu_seconds_total counter\n");
	for (r = 0; r < 2; r++) {
		for (i = 0; i < ntop; i++) {
			strbuf_adds(sb, "causeway_offcpu_seconds_total");
			labels(sb, node, top[i].comm, tt[i], NULL, NULL);
			strbuf_addf(sb, ",pid=\"%u\",reason=\"%s\"} %.9g\n", top[i].pid, reason[r],
				    (double)top[i].offcpu_ns[r] / 1e9);
		}
		strbuf_adds(sb, "causeway_offcpu_seconds_total");
		labels(sb, node, OTHER, NULL, NULL, NULL);
		strbuf_addf(sb, ",pid=\"\",reason=\"%s\"} %.9g\n", reason[r],
			    (double)rest->offcpu_ns[r] / 1e9);
	}
}

/* A consistent copy of the registry with process labels assigned (top N by
 * calls named, the rest "other") and equal label sets merged. */
struct snapshot {
	struct proc *procs; /* sorted by calls, the first ntop named */
	unsigned nprocs, ntop;
	struct proc rest;   /* off-CPU time of the unnamed */
	struct out_series *o;
	unsigned n;
	struct tenant *tenants; /* copy of the registry's */
	unsigned ntenants;
	const struct tenant **ptenant; /* of each named process; NULL unknown */
};

static void snapshot_free(struct snapshot *sn)
{
	free(sn->procs);
	free(sn->o);
	free(sn->tenants);
	free(sn->ptenant);
}

static int snapshot_take(struct cw_live_metrics *m, struct snapshot *sn)
{
	unsigned i, r;

	memset(sn, 0, sizeof(*sn));
	sn->procs = malloc((MAX_PROCS + 1) * sizeof(*sn->procs));
	sn->o = malloc((CW_LIVE_MAX_SERIES + 1) * sizeof(*sn->o));
	sn->tenants = malloc(CW_LIVE_MAX_TENANTS * sizeof(*sn->tenants));
	sn->ptenant = calloc(MAX_PROCS + 1, sizeof(*sn->ptenant));
	if (!sn->procs || !sn->o || !sn->tenants || !sn->ptenant) {
		snapshot_free(sn);
		return -ENOMEM;
	}
	pthread_mutex_lock(&m->lock);
	sn->nprocs = m->nprocs;
	memcpy(sn->procs, m->procs, sn->nprocs * sizeof(*sn->procs));
	sn->rest = m->overflow;
	for (i = 0; i < m->nseries; i++)
		sn->o[sn->n++].s = m->series[i];
	if (m->series[CW_LIVE_MAX_SERIES].count)
		sn->o[sn->n++].s = m->series[CW_LIVE_MAX_SERIES];
	sn->ntenants = m->ntenants;
	memcpy(sn->tenants, m->tenants, sn->ntenants * sizeof(*sn->tenants));
	pthread_mutex_unlock(&m->lock);

	qsort(sn->procs, sn->nprocs, sizeof(*sn->procs), by_calls_desc);
	sn->ntop = sn->nprocs < m->max_processes ? sn->nprocs : m->max_processes;
	for (i = sn->ntop; i < sn->nprocs; i++)
		for (r = 0; r < 2; r++)
			sn->rest.offcpu_ns[r] += sn->procs[i].offcpu_ns[r];
	/* Linear: ntop (20 by default) x the cgroups named so far. */
	for (i = 0; i < sn->ntop; i++)
		for (unsigned k = 0; k < sn->ntenants && sn->procs[i].cgroup_id; k++)
			if (sn->tenants[k].cgroup_id == sn->procs[i].cgroup_id) {
				sn->ptenant[i] = &sn->tenants[k];
				break;
			}
	for (i = 0; i < sn->n; i++) {
		int p = sn->o[i].s.pid ? named(sn->procs, sn->ntop, sn->o[i].s.pid) : -1;

		sn->o[i].process = p >= 0 ? sn->procs[p].comm : OTHER;
		sn->o[i].tenant = p >= 0 ? sn->ptenant[p] : NULL;
	}
	qsort(sn->o, sn->n, sizeof(*sn->o), by_labels);
	sn->n = merge_equal(sn->o, sn->n);
	return 0;
}

int cw_live_metrics_render(struct cw_live_metrics *m, const char *node, uint64_t now_mono_ns,
			   struct strbuf *sb)
{
	struct snapshot sn;
	int rc = snapshot_take(m, &sn);

	if (rc)
		return rc;
	render_histograms(sb, node, sn.o, sn.n);
	render_processes(sb, node, sn.procs, sn.ptenant, sn.ntop, &sn.rest, now_mono_ns);
	snapshot_free(&sn);
	return sb->overflow ? -ENOMEM : 0;
}

int cw_live_metrics_series(struct cw_live_metrics *m, struct cw_prom_series **out, unsigned *n)
{
	struct cw_prom_series *v;
	struct snapshot sn;
	unsigned i;
	int rc = snapshot_take(m, &sn);

	if (rc)
		return rc;
	v = calloc(sn.n ? sn.n : 1, sizeof(*v));
	if (!v) {
		snapshot_free(&sn);
		return -ENOMEM;
	}
	for (i = 0; i < sn.n; i++) {
		snprintf(v[i].process, sizeof(v[i].process), "%s", sn.o[i].process);
		snprintf(v[i].container, sizeof(v[i].container), "%s", tenant_field(sn.o[i].tenant, 0));
		snprintf(v[i].pod, sizeof(v[i].pod), "%s", tenant_field(sn.o[i].tenant, 1));
		snprintf(v[i].ns, sizeof(v[i].ns), "%s", tenant_field(sn.o[i].tenant, 2));
		snprintf(v[i].source, sizeof(v[i].source), "%s", sn.o[i].s.source);
		snprintf(v[i].op, sizeof(v[i].op), "%s", sn.o[i].s.op);
		memcpy(v[i].buckets, sn.o[i].s.buckets, sizeof(v[i].buckets));
		v[i].count = sn.o[i].s.count;
		v[i].sum_ns = sn.o[i].s.sum_ns;
		v[i].errors = sn.o[i].s.errors;
	}
	*out = v;
	*n = sn.n;
	snapshot_free(&sn);
	return 0;
}
