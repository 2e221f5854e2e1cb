/* The tenant side of `causeway trace` (trace_tenant.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/events.h"
#include "trace/tenant.h"
#include "metrics/live_metrics.h"
#include "tenant/kubelet.h"
#include "tenant/registry.h"
#include "tenant/resolve.h"
#include "util/timeutil.h"

struct trace_tenant {
	struct cw_tenant_registry *reg;
	struct cw_tenant_allow allow;
	int filtering;
	int allowed_now;
	struct cw_cuda_probes *cp;
	uint64_t allow_errors;
	struct cw_tenant_batch batch; /* the resolver's */
	int batch_pending;            /* resolved, waiting for the store */
	struct cw_live_metrics *metrics; /* /metrics labels; NULL none */
	struct cw_kubelet kubelet;       /* the resolver thread's; url NULL: off */
	uint64_t kube_stat[3];           /* fetches, errors, pods: copied under the consumer lock */
	pthread_t thread;
	int running;
	volatile int stop;
	struct cw_consumer *cons;
	struct cw_writer *w;
	uint64_t last_second_ns;
};

static const char *const flags[] = { "--cgroup", "--container", "--pod", "--slurm-job", NULL };

int trace_tenant_is_flag(const char *flag)
{
	for (int i = 0; flags[i]; i++)
		if (!strcmp(flag, flags[i]))
			return 1;
	return 0;
}

int trace_tenant_flag(struct cw_tenant_filter *filters, int *n, const char *flag, const char *value, char *err,
		      size_t errlen)
{
	/* --namespace names a store's identity rows, not a live cgroup. */
	if (!trace_tenant_is_flag(flag))
		return -ENOENT;
	return cw_tenant_filter_add(filters, n, CW_TENANT_FILTERS_MAX, flag, value, err, errlen);
}

static int allow_new(void *ctx, uint64_t id)
{
	struct trace_tenant *tt = ctx;

	if (cw_cuda_probes_allow_cgroup(tt->cp, id))
		tt->allow_errors++;
	return 0;
}

int trace_tenant_new(struct trace_tenant **out, const struct cw_tenant_filter *f, int nf, struct cw_cuda_probes *cp,
		     char *err, size_t errlen)
{
	struct trace_tenant *tt = calloc(1, sizeof(*tt));
	int rc;

	*out = NULL;
	if (!tt)
		return -ENOMEM;
	tt->cp = cp;
	if ((rc = cw_tenant_registry_new(&tt->reg)) || (rc = cw_tenant_allow_init(&tt->allow))) {
		snprintf(err, errlen, "cannot set up tenant identity: %s", strerror(-rc));
		cw_tenant_registry_free(tt->reg);
		free(tt);
		return rc;
	}
	if (nf) {
		if (!cw_cgroup2_root()) {
			snprintf(err, errlen, "tenant filters need a cgroup v2 hierarchy (none at \"/sys/fs/cgroup\" "
					      "or \"/sys/fs/cgroup/unified\")");
			trace_tenant_free(tt);
			return -ENOENT;
		}
		memcpy(tt->allow.f, f, (size_t)nf * sizeof(*f));
		tt->allow.nf = nf;
		tt->filtering = 1;
		rc = cw_tenant_allow_scan(&tt->allow, cw_cgroup2_root(), allow_new, tt);
		if (rc < 0) {
			snprintf(err, errlen, "cannot walk the cgroup tree: %s", strerror(-rc));
			trace_tenant_free(tt);
			return rc;
		}
		tt->allowed_now = rc;
	}
	*out = tt;
	return 0;
}

void trace_tenant_free(struct trace_tenant *tt)
{
	if (!tt)
		return;
	if (tt->running) {
		tt->stop = 1;
		pthread_join(tt->thread, NULL);
	}
	free(tt->batch.info);
	cw_kubelet_free(&tt->kubelet);
	cw_tenant_registry_free(tt->reg);
	cw_tenant_allow_free(&tt->allow);
	free(tt);
}

int trace_tenant_allowed_now(const struct trace_tenant *tt)
{
	return tt ? tt->allowed_now : 0;
}

void trace_tenant_tap(struct trace_tenant *tt, const void *data, size_t size)
{
	const struct cw_hdr *h = data;

	if (!tt)
		return;
	switch (h->type) {
	case CW_REC_CALL:
	case CW_REC_CALL_ENTRY:
		cw_tenant_registry_note(tt->reg, h->cgroup_id, h->pid, 1);
		break;
	case CW_REC_OFFCPU:
		if (size >= sizeof(struct cw_offcpu)) {
			const struct cw_offcpu *o = data;
			cw_tenant_registry_note(tt->reg, h->cgroup_id, h->pid, 1);
			/* The preemptor: a neighbour, named but not sampled. */
			cw_tenant_registry_note(tt->reg, o->by_cgroup_id, o->by_pid, 0);
		}
		break;
	case CW_REC_SNAPSHOT:
		break;
	default:
		cw_tenant_registry_note(tt->reg, h->cgroup_id, h->pid, 0);
		break;
	}
}

int trace_tenant_pid_allowed(struct trace_tenant *tt, uint32_t pid)
{
	char path[CW_CGPATH_MAX + 1];
	uint64_t id;

	if (!tt || !tt->filtering)
		return 1;
	if (cw_pid_cgroup_path(pid, path, sizeof(path)) || cw_cgroup_id_of(cw_cgroup2_root(), path, &id))
		return 0;
	return cw_tenant_allow_has(&tt->allow, id);
}

/* Pod names from the kubelet's list (tenants.kubelet_url) win over the
 * container's environment: the workload cannot set them. Resolver thread,
 * no lock held (a fetch takes up to CW_KUBELET_TIMEOUT_MS). */
static void apply_kubelet(struct trace_tenant *tt, struct cw_tenant_batch *b)
{
	uint64_t now = cw_monotonic_ns();

	for (int i = 0; tt->kubelet.url && i < b->n; i++) {
		struct cw_tenant *t = &b->info[i].t;
		const struct cw_kubelet_pod *p;

		if (!b->ok[i] || !t->pod_uid[0] || !(p = cw_kubelet_lookup(&tt->kubelet, t->pod_uid, now)))
			continue;
		snprintf(t->pod, sizeof(t->pod), "%s", p->name);
		snprintf(t->ns, sizeof(t->ns), "%s", p->ns);
	}
}

/* The /metrics tenant labels of the cgroups just named (the live registry
 * has its own lock: no consumer lock needed). */
static void publish_labels(struct trace_tenant *tt, const struct cw_tenant_batch *b)
{
	for (int i = 0; tt->metrics && i < b->n; i++) {
		const struct cw_tenant *t = &b->info[i].t;
		char job[40];

		if (!b->ok[i])
			continue;
		snprintf(job, sizeof(job), "slurm-job-%s", t->slurm_job);
		cw_live_metrics_tenant(tt->metrics, b->ids[i],
				       t->container_id[0] ? t->container_id : t->slurm_job[0] ? job : "",
				       t->pod[0] ? t->pod : t->pod_uid, t->ns);
	}
}

void trace_tenant_set_metrics(struct trace_tenant *tt, struct cw_live_metrics *m)
{
	tt->metrics = m;
}

/* One round: name new cgroups; with second, also rescan the allowed set,
 * sample pressure and move last seen. */
static void round_once(struct trace_tenant *tt, int second)
{
	struct cw_tenant_batch *b = &tt->batch;
	int rc, have;

	if (second && tt->filtering)
		cw_tenant_allow_scan(&tt->allow, cw_cgroup2_root(), allow_new, tt);
	cw_consumer_lock(tt->cons);
	/* While another process holds the database, its rows wait here like
	 * the consumer's records: a write now would only fail. */
	if (!cw_consumer_store_ready(tt->cons)) {
		cw_consumer_unlock(tt->cons);
		return;
	}
	if (tt->batch_pending) {
		cw_tenant_registry_commit(tt->reg, b, tt->w, cw_realtime_ns(), second);
		tt->batch_pending = 0;
		cw_consumer_unlock(tt->cons);
		return;
	}
	have = cw_tenant_registry_pending(tt->reg);
	rc = have || second ? cw_tenant_registry_take(tt->reg, b, second) : -EAGAIN;
	cw_consumer_unlock(tt->cons);
	if (rc)
		return;
	cw_tenant_batch_resolve(b, cw_monotonic_ns(), cw_realtime_ns());
	apply_kubelet(tt, b);
	publish_labels(tt, b);
	cw_consumer_lock(tt->cons);
	tt->kube_stat[0] = tt->kubelet.fetches;
	tt->kube_stat[1] = tt->kubelet.errors;
	tt->kube_stat[2] = (uint64_t)tt->kubelet.npods;
	if (cw_consumer_store_ready(tt->cons))
		cw_tenant_registry_commit(tt->reg, b, tt->w, cw_realtime_ns(), second);
	else
		tt->batch_pending = 1;
	cw_consumer_unlock(tt->cons);
}

/* The resolver: every 50 ms names what the consumer noted, so a process
 * that makes a few calls and exits is usually still there to read. */
static void *resolver(void *arg)
{
	struct trace_tenant *tt = arg;

	while (!tt->stop) {
		struct timespec ts = { 0, 50 * 1000000L };
		uint64_t now = cw_monotonic_ns();
		int second = now - tt->last_second_ns >= 1000000000ull;

		if (second)
			tt->last_second_ns = now;
		round_once(tt, second);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int trace_tenant_start(struct trace_tenant *tt, struct cw_consumer *cons, struct cw_writer *w,
		       const char *kubelet_url)
{
	int rc;

	if (!tt)
		return 0;
	tt->cons = cons;
	tt->w = w;
	tt->last_second_ns = cw_monotonic_ns();
	if (kubelet_url && (rc = cw_kubelet_init(&tt->kubelet, kubelet_url)))
		return rc;
	if ((rc = pthread_create(&tt->thread, NULL, resolver, tt)))
		return -rc;
	tt->running = 1;
	return 0;
}

void trace_tenant_finish(struct trace_tenant *tt)
{
	if (!tt || !tt->cons)
		return;
	if (tt->running) {
		tt->stop = 1;
		pthread_join(tt->thread, NULL);
		tt->running = 0;
	}
	round_once(tt, 1);
	if (tt->batch_pending) /* that round only stored the waiting batch */
		round_once(tt, 1);
}

void trace_tenant_counters(struct trace_tenant *tt, struct cw_writer *w)
{
	struct cw_tenant_stats s;

	if (!tt)
		return;
	cw_tenant_registry_stats(tt->reg, &s);
	cw_writer_counter_set(w, "trace.cgroups.resolved", s.resolved);
	cw_writer_counter_set(w, "trace.cgroups.unresolved", s.unresolved);
	cw_writer_counter_set(w, "trace.cgroups.overflow", s.overflow);
	cw_writer_counter_set(w, "trace.cgroups.pressure_samples", s.sampled);
	if (tt->kubelet.url) {
		cw_writer_counter_set(w, "trace.kubelet.fetches", tt->kube_stat[0]);
		cw_writer_counter_set(w, "trace.kubelet.errors", tt->kube_stat[1]);
		cw_writer_counter_set(w, "trace.kubelet.pods", tt->kube_stat[2]);
	}
	if (tt->filtering) {
		cw_writer_counter_set(w, "trace.cgroups.allowed", (uint64_t)tt->allow.ids.len);
		cw_writer_counter_set(w, "trace.cgroups.allow_errors", tt->allow_errors);
	}
}
