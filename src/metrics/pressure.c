/* /metrics, pressure: the IO, memory and CPU pressure (PSI) seconds and the
 * CFS throttled seconds of the traced processes' cgroups, from each
 * cgroup's newest stored sample (cgroup_pressure, written every second by
 * trace; docs/tenants.md). The kernel's totals are cumulative, so each
 * series is a counter that Prometheus' rate() turns into the share of time
 * some (or all) of the cgroup's tasks stalled on that resource.
 *
 * Cost: one index seek per cgroup (cgroup_pressure_cg) reading its newest
 * eight samples; at most
 * MAX_CGROUPS cgroups, the most recently seen first. */
#define _GNU_SOURCE
#include "metrics/families.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"

#define MAX_CGROUPS 256

struct cg {
	char node[64];
	char path[256], container[128], pod[128], ns[128];
	int64_t v[8]; /* the PSI totals (us, -1 none) in psi[] order, then throttled_usec */
};

static const struct {
	const char *resource, *kind;
} psi[6] = {
	{ "cpu", "some" }, { "cpu", "full" }, { "memory", "some" }, { "memory", "full" }, { "io", "some" }, { "io", "full" },
};

static const char *text(sqlite3_stmt *st, int col)
{
	const char *s = (const char *)sqlite3_column_text(st, col);

	return s ? s : "";
}

static void labels(struct strbuf *sb, const char *name, const struct cg *c)
{
	strbuf_adds(sb, name);
	strbuf_adds(sb, "{node=\"");
	cw_prom_escape_label(sb, c->node);
	strbuf_adds(sb, "\",cgroup=\"");
	cw_prom_escape_label(sb, c->path);
	strbuf_adds(sb, "\",container=\"");
	cw_prom_escape_label(sb, c->container);
	strbuf_adds(sb, "\",pod=\"");
	cw_prom_escape_label(sb, c->pod);
	strbuf_adds(sb, "\",namespace=\"");
	cw_prom_escape_label(sb, c->ns);
	strbuf_addch(sb, '"');
}

static int load(sqlite3 *db, struct cg *v, int *n)
{
	sqlite3_stmt *cgs = NULL, *smp = NULL;
	int rc, k = 0;

	*n = 0;
	/* A store from before the tenant tables: nothing to say. */
	if (sqlite3_prepare_v2(db,
			       "SELECT node, cgroup_id, coalesce(path, ''), coalesce(container_id, ''),"
			       " coalesce(pod, ''), coalesce(namespace, '') FROM cgroups c WHERE EXISTS"
			       " (SELECT 1 FROM cgroup_pressure p WHERE p.node = c.node AND p.cgroup_id = c.cgroup_id)"
			       " ORDER BY last_seen_wall_ns DESC, node, cgroup_id",
			       -1, &cgs, NULL) != SQLITE_OK)
		return 0;
	rc = sqlite3_prepare_v2(db,
				"SELECT cpu_some_us, cpu_full_us, memory_some_us, memory_full_us, io_some_us, io_full_us,"
				" throttled_usec FROM cgroup_pressure WHERE node = ?1 AND cgroup_id = ?2"
				" ORDER BY wall_ns DESC LIMIT 8",
				-1, &smp, NULL);
	while (rc == SQLITE_OK && k < MAX_CGROUPS && (rc = sqlite3_step(cgs)) == SQLITE_ROW) {
		struct cg *c = &v[k];
		int dup = 0;

		snprintf(c->node, sizeof(c->node), "%s", text(cgs, 0));
		snprintf(c->path, sizeof(c->path), "%s", text(cgs, 2));
		/* A path created again has a new id: one series per path, the
		 * most recently seen cgroup's (first in this order). */
		for (int j = 0; j < k && !dup; j++)
			dup = !strcmp(v[j].node, c->node) && !strcmp(v[j].path, c->path);
		if (dup)
			continue;
		snprintf(c->container, sizeof(c->container), "%s", text(cgs, 3));
		snprintf(c->pod, sizeof(c->pod), "%s", text(cgs, 4));
		snprintf(c->ns, sizeof(c->ns), "%s", text(cgs, 5));
		sqlite3_bind_text(smp, 1, c->node, -1, SQLITE_STATIC);
		sqlite3_bind_int64(smp, 2, sqlite3_column_int64(cgs, 1));
		for (int i = 0; i < 7; i++)
			c->v[i] = -1;
		/* Each total from the newest sample that has it: a sample taken
		 * as the cgroup emptied can lack some. */
		while ((rc = sqlite3_step(smp)) == SQLITE_ROW)
			for (int i = 0; i < 7; i++)
				if (c->v[i] < 0 && sqlite3_column_type(smp, i) != SQLITE_NULL)
					c->v[i] = sqlite3_column_int64(smp, i);
		sqlite3_reset(smp);
		if (rc != SQLITE_DONE)
			break;
		rc = SQLITE_OK;
		for (int i = 0; i < 7; i++)
			if (c->v[i] >= 0) {
				k++;
				break;
			}
	}
	if (rc == SQLITE_DONE || rc == SQLITE_ROW)
		rc = SQLITE_OK;
	sqlite3_finalize(cgs);
	sqlite3_finalize(smp);
	*n = k;
	return rc == SQLITE_OK ? 0 : cw_sqlite_errno(rc);
}

int cw_metrics_render_pressure(sqlite3 *db, struct strbuf *sb)
{
	struct cg *v = calloc(MAX_CGROUPS, sizeof(*v));
	int n = 0, rc;

	if (!v)
		return -ENOMEM;
	rc = load(db, v, &n);
	if (rc || !n)
		goto out;
	strbuf_adds(sb, "# HELP causeway_cgroup_pressure_seconds_total Time some (or all) tasks of a traced "
			"process's cgroup stalled on CPU, memory or IO (PSI totals, at the newest sample).\n"
			"# TYPE causeway_cgroup_pressure_seconds_total counter\n");
	for (int k = 0; k < n; k++)
		for (int i = 0; i < 6; i++) {
			if (v[k].v[i] < 0)
				continue;
			labels(sb, "causeway_cgroup_pressure_seconds_total", &v[k]);
			strbuf_addf(sb, ",resource=\"%s\",kind=\"%s\"} %.6f\n", psi[i].resource, psi[i].kind,
				    (double)v[k].v[i] / 1e6);
		}
	strbuf_adds(sb, "# HELP causeway_cgroup_cpu_throttled_seconds_total Time a traced process's cgroup "
			"was held back by its CPU quota (cpu.stat throttled time, at the newest sample).\n"
			"# TYPE causeway_cgroup_cpu_throttled_seconds_total counter\n");
	for (int k = 0; k < n; k++) {
		if (v[k].v[6] < 0)
			continue;
		labels(sb, "causeway_cgroup_cpu_throttled_seconds_total", &v[k]);
		strbuf_addf(sb, "} %.6f\n", (double)v[k].v[6] / 1e6);
	}
out:
	free(v);
	return rc ? rc : sb->overflow ? -ENOMEM : 0;
}
