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

/* Where the culprit's cgroup files are: the v2 mount on a unified host;
 * on a hybrid one (v1 controllers) the v1 cpu hierarchy holds the quota. */
static void fixes(struct cw_chain *c)
{
	const struct cw_tenant_ref *n = &c->culprit.container, *v = &c->container;
	char id12[16];

	snprintf(id12, sizeof(id12), "%.12s", n->id);
	c->nfix = 0;
	if (n->pod_uid[0]) {
		if (n->pod[0])
			cw_chain_add_advice(c, "set resources.limits.cpu on the containers of pod %s%s%s (its owner's pod"
					 " template): CFS quota caps it at that many CPUs",
					 n->ns, n->ns[0] ? "/" : "", n->pod);
		else
			cw_chain_add_advice(c, "set resources.limits.cpu on the containers of pod UID %s (its owner's pod"
					 " template): CFS quota caps it at that many CPUs", n->pod_uid);
		cw_chain_add_advice(c, "give the slowed pod Guaranteed QoS with integer CPU requests (requests ="
				 " limits) and run the kubelet with --cpu-manager-policy=static: it gets exclusive CPUs");
	} else if (!strcmp(n->runtime, "docker")) {
		cw_chain_add_fix(c, "docker update --cpus 1 --cpu-shares 256 %s", id12);
	} else if (!strcmp(n->runtime, "podman")) {
		cw_chain_add_fix(c, "podman update --cpus 1 %s", id12);
	} else if (!strcmp(n->runtime, "slurm")) {
		cw_chain_add_advice(c, "confine Slurm jobs to their allocated cores: ConstrainCores=yes in cgroup.conf"
				 " (TaskPlugin=task/cgroup,task/affinity), and size %s with --cpus-per-task",
				 n->id);
	}
	if (n->cgroup[0]) {
		cw_chain_add_fix(c, "echo '100000 100000' > /sys/fs/cgroup%s/cpu.max  # cgroup v2: at most one CPU",
				 n->cgroup);
		cw_chain_add_fix(c, "echo 20 > /sys/fs/cgroup%s/cpu.weight  # cgroup v2: a fifth of the default share",
				 n->cgroup);
		cw_chain_add_fix(c, "echo 100000 > /sys/fs/cgroup/cpu%s/cpu.cfs_quota_us  # cgroup v1 hosts",
				 n->cgroup);
	}
	if (c->culprit.pid > 0 && v->known)
		cw_chain_add_fix(c, "renice +19 -p %lld  # until the tenant is capped", (long long)c->culprit.pid);
}

int cw_rule_noisy_neighbour(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	char head[128], victim[200], culprit[200];

	(void)ctx;
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
	fixes(c);
	return 1;
}
