/* cpu_preemption: the slow calls' own thread sat runnable but off-CPU
 * (sched_switch with prev_state == TASK_RUNNING) while another task held
 * its CPU. explained_share = preempted time / slow-call time. */
#include <stdio.h>
#include <string.h>

#include "analysis/rules/rules.h"
#include "util/timeutil.h"

/* "0-2,4-7": every CPU of ncpu except skip. */
void cw_cpus_except(char *buf, size_t len, int ncpu, int skip)
{
	size_t off = 0;
	int start = -1;

	buf[0] = 0;
	for (int i = 0; i <= ncpu; i++) {
		int in = i < ncpu && i != skip;
		if (in && start < 0)
			start = i;
		if (!in && start >= 0) {
			int n;
			if (start == i - 1)
				n = snprintf(buf + off, len - off, "%s%d", off ? "," : "", start);
			else
				n = snprintf(buf + off, len - off, "%s%d-%d", off ? "," : "", start, i - 1);
			if (n < 0 || (size_t)n >= len - off)
				return;
			off += (size_t)n;
			start = -1;
		}
	}
}

/* The cgroup v2 path of id on the node, from the cgroups table. */
static void cgroup_path(const struct cw_rule_ctx *ctx, uint64_t id, char *buf, size_t len)
{
	sqlite3_stmt *st = NULL;

	snprintf(buf, len, "<cgroup %llu>", (unsigned long long)id);
	if (sqlite3_prepare_v2(ctx->db, "SELECT path FROM cgroups WHERE node = ?1 AND cgroup_id = ?2", -1,
			       &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_text(st, 1, ctx->st->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)id);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
		const char *p = (const char *)sqlite3_column_text(st, 0);
		snprintf(buf, len, "%s", p[0] == '/' ? p + 1 : p);
	}
	sqlite3_finalize(st);
}

/* 1 when pid was causeway's own tracing agent on the node (trace stores
 * its pid and CPU time as counters; a store without them: a thread named
 * causeway). Its
 * CPU time over the session's length, in % of one CPU, goes to *cpu_pct
 * (-1 unknown). */
static int is_agent(const struct cw_rule_ctx *ctx, int64_t pid, const char *comm, double *cpu_pct)
{
	static const char sql[] =
		"SELECT (SELECT value FROM counters k WHERE k.node = a.node AND k.session_id = a.session_id"
		" AND k.name = 'trace.agent.cpu_ns'), s.started_wall_ns, s.ended_wall_ns"
		" FROM counters a LEFT JOIN sessions s ON s.id = a.session_id"
		" WHERE a.node = ?1 AND a.name = 'trace.agent.pid' AND a.value = ?2 ORDER BY a.session_id DESC LIMIT 1";
	sqlite3_stmt *st = NULL;
	int found = 0, recorded = 0;

	*cpu_pct = -1;
	if (pid > 0 && ctx->db && sqlite3_prepare_v2(ctx->db, sql, -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, ctx->st->node, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, pid);
		if (sqlite3_step(st) == SQLITE_ROW) {
			int64_t cpu = sqlite3_column_int64(st, 0), from = sqlite3_column_int64(st, 1),
				to = sqlite3_column_int64(st, 2);
			found = 1;
			if (sqlite3_column_type(st, 0) != SQLITE_NULL && to > from)
				*cpu_pct = 100.0 * (double)cpu / (double)(to - from);
		}
	}
	sqlite3_finalize(st);
	st = NULL;
	/* Another causeway process (a second trace, a serve) is not this
	 * store's agent: the name counts only where no agent pid was stored. */
	if (!found && ctx->db &&
	    sqlite3_prepare_v2(ctx->db, "SELECT 1 FROM counters WHERE node = ?1 AND name = 'trace.agent.pid' LIMIT 1", -1,
			       &st, NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, ctx->st->node, -1, SQLITE_STATIC);
		recorded = sqlite3_step(st) == SQLITE_ROW;
	}
	sqlite3_finalize(st);
	return found || (!recorded && !strncmp(comm, "causeway", 8));
}

int cw_rule_cpu_preemption(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	char head[128], pre[32];
	const struct cw_culprit_acc *hog = ctx->nculprits ? &ctx->culprits[0] : NULL;
	const struct cw_slowcall *worst = NULL;
	double share, hog_share, agent_cpu = -1;
	int agent = 0;

	if (!ctx->slow_time_ns || !ctx->preempted_ns)
		return 0;
	share = (double)ctx->preempted_ns / (double)ctx->slow_time_ns;
	/* The culprit's part of the preempted time: the same figure as
	 * evidence.culprit_share, so text and JSON agree. */
	hog_share = hog ? (double)hog->ns / (double)ctx->preempted_ns : 0;
	c->kind = CW_KIND_CPU_PREEMPTION;
	c->explained_share = share;
	cw_chain_headline(c, head, sizeof(head));
	if (hog) {
		c->culprit.known = 1;
		snprintf(c->culprit.comm, sizeof(c->culprit.comm), "%s", hog->comm);
		c->culprit.pid = hog->pid;
		c->culprit.cgroup_id = hog->cgroup_id;
		c->culprit.cpu = hog->cpu;
		c->culprit.overlap_ns = hog->ns;
	}
	if (hog && (agent = is_agent(ctx, hog->pid, hog->comm, &agent_cpu))) {
		char use[64] = "";

		if (agent_cpu >= 0)
			snprintf(use, sizeof(use), ", which used %.0f %% of a CPU while tracing", agent_cpu);
		snprintf(c->summary, sizeof(c->summary),
			 "%s: thread %lld (%s) was preempted for %.0f %% of its slow calls' time by causeway's own"
			 " tracing agent (pid %lld, cpu %d%s): the observer, not the workload's neighbours",
			 head, (long long)c->tid, c->comm, share * 100, (long long)hog->pid, hog->cpu, use);
	} else if (hog && hog->cpu >= 0)
		snprintf(c->summary, sizeof(c->summary),
			 "%s: thread %lld (%s) was preempted for %.0f %% of its slow calls' time, %.0f %% of that by %s"
			 " (pid %lld, cpu %d)",
			 head, (long long)c->tid, c->comm, share * 100, hog_share * 100, hog->comm, (long long)hog->pid,
			 hog->cpu);
	else if (hog)
		snprintf(c->summary, sizeof(c->summary),
			 "%s: thread %lld (%s) was preempted for %.0f %% of its slow calls' time, %.0f %% of that by %s"
			 " (pid %lld)",
			 head, (long long)c->tid, c->comm, share * 100, hog_share * 100, hog->comm, (long long)hog->pid);
	else
		snprintf(c->summary, sizeof(c->summary),
			 "%s: thread %lld (%s) was preempted for %.0f %% of its slow calls' time",
			 head, (long long)c->tid, c->comm, share * 100);

	for (size_t i = 0; i < ctx->ncalls; i++)
		if (!worst || ctx->calls[i].preempted_ns > worst->preempted_ns)
			worst = &ctx->calls[i];
	cw_format_duration(ctx->preempted_ns, pre, sizeof(pre));
	cw_chain_add_timeline(c, CW_LAYER_HOST, ctx->calls[0].wall_ns,
			      "thread %lld runnable but off-CPU for %s across %zu slow calls (%.0f %%)",
			      (long long)c->tid, pre, ctx->ncalls, share * 100);
	if (hog) {
		char held[32];
		cw_format_duration(hog->ns, held, sizeof(held));
		/* At the call this hog preempted longest: the window's
		 * slowest call may be another hog's (an incident's). */
		cw_chain_add_timeline(c, CW_LAYER_HOST, hog->worst_ns ? hog->worst_wall_ns : worst->wall_ns,
				      "CPU %d held by %s (pid %lld, cgroup %llu) for %s of that time",
				      hog->cpu, hog->comm, (long long)hog->pid,
				      (unsigned long long)hog->cgroup_id, held);
	}
	const struct cw_snap *sn = cw_sysctx_snap_at(ctx->sys, worst->mono_ns);
	int ncpu = sn && sn->ncpu > 0 ? sn->ncpu : 0;
	if (sn)
		cw_chain_add_timeline(c, CW_LAYER_SYSTEM, sn->wall_ns, "cpu %.0f %%, load %.1f on %d CPUs",
				      sn->cpu_pct, sn->load1, ncpu);

	if (agent) {
		/* The agent's cost is the tracing's: keep it off the workload's
		 * CPUs and lighter, rather than renicing a "neighbour". */
		if (hog->cpu >= 0 && ncpu > 1 && hog->pid > 0) {
			char cpus[128];
			cw_cpus_except(cpus, sizeof(cpus), ncpu, hog->cpu);
			cw_chain_add_fix(c, "taskset -acp %s %lld  # keep causeway off the workload's CPU", cpus,
					 (long long)hog->pid);
		}
		cw_chain_add_fix(c, "causeway trace --py-stacks off --agg-pct 50  # fewer stacks, calls counted in the kernel sooner");
		cw_chain_add_evidence(c, "agent_cpu_pct", agent_cpu, 0);
	}
	if (hog && hog->pid > 0 && !agent)
		cw_chain_add_fix(c, "renice +19 -p %lld", (long long)hog->pid);
	if (hog && hog->cpu >= 0 && ncpu > 1 && c->pid > 0) {
		char cpus[128];
		cw_cpus_except(cpus, sizeof(cpus), ncpu, hog->cpu);
		cw_chain_add_fix(c, "taskset -acp %s %lld", cpus, (long long)c->pid);
	}
	if (hog && hog->pid > 0 && hog->cpu >= 0 && !agent)
		cw_chain_add_fix(c, "taskset -acp %d %lld", hog->cpu, (long long)hog->pid);
	if (hog && hog->cgroup_id && !agent) {
		char cg[160];
		cgroup_path(ctx, hog->cgroup_id, cg, sizeof(cg));
		cw_chain_add_fix(c, "echo '100000 100000' > /sys/fs/cgroup/%s/cpu.max  # cap the neighbour at one CPU", cg);
	}
	cw_chain_add_evidence(c, "preempted_ns", (double)ctx->preempted_ns, 1);
	cw_chain_add_evidence(c, "blocked_ns", (double)ctx->blocked_ns, 1);
	cw_chain_add_evidence(c, "slow_time_ns", (double)ctx->slow_time_ns, 1);
	if (hog)
		cw_chain_add_evidence(c, "culprit_share", hog_share, 0);
	return 1;
}
