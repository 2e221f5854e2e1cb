/* noisy_neighbour: a cpu_preemption chain whose culprit runs in another
 * tenant of the host (a container, pod or Slurm job other than the slowed
 * thread's). The measure is cpu_preemption's (explained_share = preempted
 * time / slow-call time); what changes is who is named and the fixes,
 * which are the culprit runtime's way to cap a tenant: cgroup v2
 * cpu.max/cpu.weight, Kubernetes requests/limits and the CPU manager's
 * static policy, `docker update --cpus`, Slurm's core confinement. */
#include <stdio.h>
#include <string.h>

#include "analysis/rules/rules.h"
#include "store/store.h"
#include "tenant/resolve.h"

/* The host's cgroup layout from the chain's node's latest trace session
 * (counter host.cgroup_layout, tenant/resolve.h); -1 when the store does
 * not say (older files). */
static int host_layout(sqlite3 *db, const char *node)
{
	sqlite3_stmt *st = NULL;
	int layout = -1;

	if (sqlite3_prepare_v2(db,
			       "SELECT value FROM counters WHERE node = ?1 AND name = 'host.cgroup_layout'"
			       " ORDER BY session_id DESC LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		layout = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return layout;
}

/* The culprit tenant's cgroup files, in the host's layout only: cpu.max
 * and cpu.weight under the v2 mount on a unified host; the v1 cpu
 * hierarchy's quota and shares on a hybrid or v1 one (its v2 tree has no
 * controllers). Both, labelled, when the store does not say. A
 * BestEffort pod already has the lowest weight (cpu.weight 1, cpu.shares
 * 2): a weight write would raise its share, so only the quota is named. */
static void cgroup_fixes(struct cw_chain *c, int layout)
{
	const struct cw_tenant_ref *n = &c->culprit.container;
	int besteffort = !strcmp(n->qos, "besteffort");

	if (layout != CW_CGROUP_HYBRID && layout != CW_CGROUP_LEGACY) {
		cw_chain_add_fix(c, "echo '100000 100000' > /sys/fs/cgroup%s/cpu.max  # cgroup v2: at most one CPU%s",
				 n->cgroup, layout < 0 ? " (cgroup v2 hosts)" : "");
		if (!besteffort)
			cw_chain_add_fix(c, "echo 20 > /sys/fs/cgroup%s/cpu.weight  # a fifth of the default share%s",
					 n->cgroup, layout < 0 ? " (cgroup v2 hosts)" : "");
	}
	if (layout != CW_CGROUP_UNIFIED) {
		cw_chain_add_fix(c, "echo 100000 > /sys/fs/cgroup/cpu%s/cpu.cfs_quota_us  # at most one CPU%s",
				 n->cgroup, layout < 0 ? " (cgroup v1 hosts)" : "");
		if (!besteffort)
			cw_chain_add_fix(c, "echo 204 > /sys/fs/cgroup/cpu%s/cpu.shares  # a fifth of the default share%s",
					 n->cgroup, layout < 0 ? " (cgroup v1 hosts)" : "");
	}
}

/* The culprit runtime's way to cap a tenant, then its cgroup files. */
static void fixes(sqlite3 *db, struct cw_chain *c)
{
	const struct cw_tenant_ref *n = &c->culprit.container, *v = &c->container;
	char id12[16];

	snprintf(id12, sizeof(id12), "%.12s", n->id);
	c->nfix = 0;
	if (n->pod_uid[0]) {
		if (n->pod[0])
			cw_chain_add_advice(c, "set resources.limits.cpu on the containers of pod %s%s%s (its owner's pod"
					 " template): CFS quota caps it at that many CPUs%s",
					 n->ns, n->ns[0] ? "/" : "", n->pod,
					 !strcmp(n->qos, "besteffort") ? "; as a BestEffort pod it has no requests or limits at all" : "");
		else
			cw_chain_add_advice(c, "set resources.limits.cpu on the containers of pod UID %s (its owner's pod"
					 " template): CFS quota caps it at that many CPUs", n->pod_uid);
		if (strcmp(v->qos, "guaranteed"))
			cw_chain_add_advice(c, "give the slowed pod Guaranteed QoS with integer CPU requests (requests ="
					 " limits) and run the kubelet with --cpu-manager-policy=static: it gets exclusive CPUs");
		else
			cw_chain_add_advice(c, "the slowed pod is Guaranteed: with integer CPU requests and the kubelet's"
					 " --cpu-manager-policy=static its CPUs become exclusive, out of the neighbour's reach");
	} else if (!strcmp(n->runtime, "docker")) {
		cw_chain_add_fix(c, "docker update --cpus 1 --cpu-shares 256 %s", id12);
	} else if (!strcmp(n->runtime, "podman")) {
		cw_chain_add_fix(c, "podman update --cpus 1 %s", id12);
	} else if (!strcmp(n->runtime, "slurm")) {
		cw_chain_add_advice(c, "confine Slurm jobs to their allocated cores: ConstrainCores=yes in cgroup.conf"
				 " (TaskPlugin=task/cgroup,task/affinity), and size %s with --cpus-per-task",
				 n->id);
	}
	if (n->cgroup[0])
		cgroup_fixes(c, host_layout(db, c->node));
	if (c->culprit.pid > 0 && v->known)
		cw_chain_add_fix(c, "renice +19 -p %lld  # until the tenant is capped", (long long)c->culprit.pid);
}

int cw_rule_noisy_neighbour(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	char head[128], victim[200], culprit[200];

	if (c->kind != CW_KIND_CPU_PREEMPTION || !c->culprit.known || !c->container.known ||
	    !cw_tenant_is_workload(&c->culprit.container) || !strcmp(c->container.key, c->culprit.container.key))
		return 0;
	cw_tenant_ref_name(&c->container, victim, sizeof(victim));
	cw_tenant_ref_name(&c->culprit.container, culprit, sizeof(culprit));
	cw_chain_headline(c, head, sizeof(head));
	c->kind = CW_KIND_NOISY_NEIGHBOUR;
	snprintf(c->summary, sizeof(c->summary),
		 "%.100s: thread %lld (%.16s) in %.90s was preempted for %.0f %% of its slow calls' time, %.0f %% of"
		 " that by %.16s (pid %lld) in %.90s, another tenant",
		 head, (long long)c->tid, c->comm, victim, c->explained_share * 100,
		 cw_chain_evidence_value(c, "culprit_share", 1) * 100, c->culprit.comm, (long long)c->culprit.pid,
		 culprit);
	cw_chain_add_timeline(c, CW_LAYER_HOST, c->timeline[c->ntimeline ? c->ntimeline - 1 : 0].t_ns,
			      "%s (pid %lld) runs in %.80s; the slowed thread in %.80s", c->culprit.comm,
			      (long long)c->culprit.pid, culprit, victim);
	fixes(ctx->db, c);
	return 1;
}
