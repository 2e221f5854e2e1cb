/* cfs_throttling: the slowed thread sat runnable but off-CPU (what
 * cpu_preemption measures) while its own cgroup was throttled by its CPU
 * quota (cpu.max, or cpu.cfs_quota_us on cgroup v1): the tenant is
 * limited by its own limit, not pushed aside by a neighbour, and the fix
 * is the quota. Evidence: the cgroup's pressure samples (trace samples
 * cpu.stat every second for the traced processes' cgroups) show
 * nr_throttled growing in the window and throttled time of at least
 * CW_THROTTLE_MIN_SHARE of the preempted time. */
#include <stdio.h>
#include <string.h>

#include "analysis/rules/rules.h"
#include "util/timeutil.h"

#define CW_THROTTLE_MIN_SHARE 0.25

struct throttle {
	int64_t periods, throttled, throttled_us, quota_us, period_us;
};

static int load(const struct cw_rule_ctx *ctx, const struct cw_chain *c, struct throttle *t)
{
	sqlite3_stmt *st = NULL;
	int ok = 0;

	/* One second of slack each side: samples are once a second. */
	if (sqlite3_prepare_v2(ctx->db,
			       "SELECT max(nr_periods) - min(nr_periods), max(nr_throttled) - min(nr_throttled),"
			       " max(throttled_usec) - min(throttled_usec), max(quota_us), max(period_us), count(*)"
			       " FROM cgroup_pressure WHERE node = ?1 AND cgroup_id = ?2 AND wall_ns BETWEEN ?3 AND ?4"
			       " AND nr_throttled IS NOT NULL",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(st, 1, c->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)c->container.cgroup_id);
	sqlite3_bind_int64(st, 3, (int64_t)(ctx->window_from_ns - 1000000000ull));
	sqlite3_bind_int64(st, 4, (int64_t)(ctx->window_to_ns + 1000000000ull));
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 5) >= 2) {
		t->periods = sqlite3_column_int64(st, 0);
		t->throttled = sqlite3_column_int64(st, 1);
		t->throttled_us = sqlite3_column_int64(st, 2);
		t->quota_us = sqlite3_column_type(st, 3) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 3);
		t->period_us = sqlite3_column_type(st, 4) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 4);
		ok = 1;
	}
	sqlite3_finalize(st);
	return ok;
}

int cw_rule_cfs_throttling(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	char head[128], who[200], thr[32], quota[96] = "";
	struct throttle t = { 0 };
	const struct cw_tenant_ref *v = &c->container;

	if (c->kind != CW_KIND_CPU_PREEMPTION || !v->known || !ctx->preempted_ns || !load(ctx, c, &t))
		return 0;
	if (t.throttled <= 0 || (double)t.throttled_us * 1000.0 < CW_THROTTLE_MIN_SHARE * (double)ctx->preempted_ns)
		return 0;
	cw_tenant_ref_name(v, who, sizeof(who));
	cw_chain_headline(c, head, sizeof(head));
	cw_format_duration((uint64_t)t.throttled_us * 1000, thr, sizeof(thr));
	if (t.quota_us > 0 && t.period_us > 0)
		snprintf(quota, sizeof(quota), " (quota %lld us per %lld us: %.2f CPU)", (long long)t.quota_us,
			 (long long)t.period_us, (double)t.quota_us / (double)t.period_us);
	c->kind = CW_KIND_CFS_THROTTLING;
	snprintf(c->summary, sizeof(c->summary),
		 "%.100s: thread %lld (%.16s) in %.90s was throttled by its own CPU quota%.60s: the cgroup was throttled"
		 " in %lld of %lld periods (%.16s), and the thread sat runnable off-CPU for %.0f %% of its slow calls'"
		 " time",
		 head, (long long)c->tid, c->comm, who, quota, (long long)t.throttled, (long long)t.periods, thr,
		 c->explained_share * 100);
	cw_chain_add_timeline(c, CW_LAYER_HOST, ctx->calls[0].wall_ns, "cgroup %s throttled %lld times for %s%s",
			      v->cgroup, (long long)t.throttled, thr, quota);
	/* The culprit, if any, ran while this tenant was held back: not the
	 * cause. */
	c->culprit.known = 0;
	c->nfix = 0;
	if (v->pod_uid[0])
		cw_chain_add_advice(c, "raise or remove resources.limits.cpu of pod %s%s%s (CFS quota comes from the limit)",
				 v->ns, v->ns[0] ? "/" : "", v->pod[0] ? v->pod : v->pod_uid);
	else if (!strcmp(v->runtime, "docker") || !strcmp(v->runtime, "podman"))
		cw_chain_add_fix(c, "%s update --cpus %lld %.12s", v->runtime,
				 t.quota_us > 0 && t.period_us > 0 ? (long long)(t.quota_us / t.period_us) * 2 + 2 : 2LL,
				 v->id);
	cw_chain_add_fix(c, "echo 'max 100000' > /sys/fs/cgroup%s/cpu.max  # cgroup v2: no quota", v->cgroup);
	cw_chain_add_fix(c, "echo -1 > /sys/fs/cgroup/cpu%s/cpu.cfs_quota_us  # cgroup v1 hosts", v->cgroup);
	cw_chain_add_advice(c, "or keep the quota and make the work fit: fewer threads or DataLoader workers in %s", who);
	cw_chain_add_evidence(c, "throttled_ns", (double)t.throttled_us * 1000.0, 1);
	cw_chain_add_evidence(c, "nr_throttled", (double)t.throttled, 1);
	return 1;
}
