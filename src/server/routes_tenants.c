/* /api/v1/tenants: per container, pod or job (a cgroup and its identity,
 * docs/tenants.md) in a window: the GPU calls its processes made, the
 * off-CPU time of their threads, the chains whose affected thread ran in it
 * and the chains it was the culprit of (docs/api.md). Calls come from one
 * pass over the window's rowid range of events (no per-cgroup aggregate
 * exists) and the folded table; chains from the explain engine over the
 * same window. */
#define _GNU_SOURCE
#include "server/routes_api.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/engine.h"
#include "analysis/explain.h"
#include "store/store.h"
#include "util/timeutil.h"

#define TENANTS_MAX 1000

/* Calls are rows plus the calls summary capture folded in the kernel (the
 * folded table, per process), each process's in the cgroup of its latest
 * row in the window (its first and sampled calls always have rows; a
 * process row's cgroup is where it started, before a runtime moved it).
 * A file before schema v9 has no folded table: SQL_TENANTS_V8. */
#define SQL_ROW_CALLS                                                                                     \
	"base AS (SELECT node, pid, cgroup_id, count(*) AS n, max(id) AS last FROM events"                \
	"  WHERE id >= ?1 AND id < ?2 AND source IN ('cuda', 'driver', 'graph', 'nccl')"                   \
	"  AND wall_ns >= ?3 AND wall_ns < ?4 AND cgroup_id IS NOT NULL GROUP BY node, pid, cgroup_id),"   \
	" rowcalls AS (SELECT node, cgroup_id, sum(n) AS n FROM base GROUP BY node, cgroup_id),"
#define SQL_TENANTS_REST                                                                                  \
	" off AS (SELECT o.node, p.cgroup_id, CAST(total(o.duration_ns) AS INTEGER) AS ns FROM offcpu o JOIN processes p" \
	"  ON p.node = o.node AND p.pid = o.pid WHERE o.wall_ns >= ?3 AND o.wall_ns < ?4"                  \
	"  AND p.cgroup_id IS NOT NULL GROUP BY o.node, p.cgroup_id)"                                      \
	" SELECT g.node, g.cgroup_id, g.runtime, g.container_id, g.pod, g.namespace, g.path, g.tenant,"    \
	"  coalesce(c.n, 0), coalesce(f.ns, 0)"                                                            \
	" FROM cgroups g LEFT JOIN calls c ON c.node = g.node AND c.cgroup_id = g.cgroup_id"               \
	" LEFT JOIN off f ON f.node = g.node AND f.cgroup_id = g.cgroup_id"                                \
	" ORDER BY coalesce(c.n, 0) DESC, g.node, g.cgroup_id LIMIT ?5"

/* SQLite takes a bare column of an aggregate query with max() from the
 * row holding the maximum: each process's latest cgroup. */
static const char SQL_TENANTS[] =
	"WITH " SQL_ROW_CALLS
	" pidcg AS (SELECT node, pid, cgroup_id, max(last) FROM base GROUP BY node, pid),"
	" fold AS (SELECT f.node, p.cgroup_id, sum(f.count) AS n FROM folded f"
	"  JOIN pidcg p ON p.node = f.node AND p.pid = f.pid"
	"  WHERE f.second >= ?3 / 1000000000 AND f.second * 1000000000 < ?4 GROUP BY f.node, p.cgroup_id),"
	" calls AS (SELECT node, cgroup_id, sum(n) AS n FROM (SELECT * FROM rowcalls UNION ALL SELECT * FROM fold)"
	"  GROUP BY node, cgroup_id)," SQL_TENANTS_REST;

static const char SQL_TENANTS_V8[] =
	"WITH " SQL_ROW_CALLS " calls AS (SELECT * FROM rowcalls)," SQL_TENANTS_REST;

struct chain_count {
	char node[64];
	uint64_t cgroup_id;
	int affected, culprit;
};

static void count_chain(struct chain_count *v, int *n, int cap, const char *node, uint64_t cg, int culprit)
{
	int i;

	if (!cg)
		return;
	for (i = 0; i < *n; i++)
		if (v[i].cgroup_id == cg && !strcmp(v[i].node, node))
			break;
	if (i == *n) {
		if (*n == cap)
			return;
		memset(&v[i], 0, sizeof(v[i]));
		snprintf(v[i].node, sizeof(v[i].node), "%s", node);
		v[i].cgroup_id = cg;
		(*n)++;
	}
	if (culprit)
		v[i].culprit++;
	else
		v[i].affected++;
}

void cw_route_tenants(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r)
{
	struct cw_explain_opts o = { 0 };
	struct cw_explain_result res = { 0 };
	struct chain_count *cc = NULL;
	sqlite3_stmt *st = NULL;
	json_t *tenants = NULL;
	uint64_t deadline, from, to, lo, hi;
	int64_t id_lo, id_hi;
	int rc, ncc = 0, have_res = 0;
	sqlite3 *db;

	if (cw_api_open(s, &db, &deadline, r))
		return;
	if (cw_api_window(db, c, &from, &to, r))
		goto out;
	if ((rc = cw_api_data_range(db, &lo, &hi))) {
		cw_api_fail(s, deadline, rc, "tenants", r);
		goto out;
	}
	o.from_wall_ns = from;
	o.to_wall_ns = to;
	from = from ? from : lo;
	to = to ? to : hi;
	if ((rc = cw_explain_run(db, &o, &res))) {
		cw_api_fail(s, deadline, rc, "explain", r);
		goto out;
	}
	have_res = 1;
	if (!(cc = calloc((size_t)res.count * 2 + 1, sizeof(*cc)))) {
		cw_reply_error(r, 500, "out of memory");
		goto out;
	}
	for (int i = 0; i < res.count; i++) {
		const struct cw_chain *ch = &res.chains[i];

		count_chain(cc, &ncc, res.count * 2, ch->node, ch->container.known ? ch->container.cgroup_id : 0, 0);
		count_chain(cc, &ncc, res.count * 2, ch->node, ch->culprit.known ? ch->culprit.cgroup_id : 0, 1);
	}
	if ((rc = cw_events_id_at(db, from > 2 * NSEC_PER_SEC ? from - 2 * NSEC_PER_SEC : 0, &id_lo)) < 0 ||
	    (rc = cw_events_id_at(db, to + 2 * NSEC_PER_SEC, &id_hi)) < 0) {
		cw_api_fail(s, deadline, rc, "tenants", r);
		goto out;
	}
	rc = sqlite3_prepare_v2(db, SQL_TENANTS, -1, &st, NULL);
	if (rc == SQLITE_ERROR)
		rc = sqlite3_prepare_v2(db, SQL_TENANTS_V8, -1, &st, NULL);
	if (rc != SQLITE_OK) {
		cw_api_fail(s, deadline, cw_sqlite_errno(rc), "tenants", r);
		goto out;
	}
	sqlite3_bind_int64(st, 1, id_lo);
	sqlite3_bind_int64(st, 2, id_hi);
	sqlite3_bind_int64(st, 3, (int64_t)from);
	sqlite3_bind_int64(st, 4, (int64_t)to);
	sqlite3_bind_int(st, 5, TENANTS_MAX);
	tenants = json_array();
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *node = (const char *)sqlite3_column_text(st, 0);
		uint64_t cg = (uint64_t)sqlite3_column_int64(st, 1);
		int64_t calls = sqlite3_column_int64(st, 8), off = sqlite3_column_int64(st, 9);
		int affected = 0, culprit = 0;

		for (int i = 0; i < ncc; i++)
			if (cc[i].cgroup_id == cg && node && !strcmp(cc[i].node, node)) {
				affected = cc[i].affected;
				culprit = cc[i].culprit;
			}
		/* Cgroups that did nothing traced in the window are left out. */
		if (!calls && !off && !affected && !culprit)
			continue;
		json_array_append_new(
			tenants, json_pack("{s:o, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:i, s:i}", "node",
					   cw_api_text(st, 0), "cgroup_id", (json_int_t)cg, "runtime",
					   cw_api_text(st, 2), "container_id", cw_api_text(st, 3), "pod",
					   cw_api_text(st, 4), "namespace", cw_api_text(st, 5), "cgroup",
					   cw_api_text(st, 6), "tenant", cw_api_text(st, 7), "calls", (json_int_t)calls,
					   "offcpu_ns", (json_int_t)off, "chains", affected, "culprit_of", culprit));
	}
	if (rc != SQLITE_DONE) {
		cw_api_fail(s, deadline, cw_sqlite_errno(rc), "tenants", r);
		goto out;
	}
	cw_reply_json(r, 200, cw_api_window_answer(s, from, to, "tenants", json_incref(tenants)));
out:
	sqlite3_finalize(st);
	json_decref(tenants);
	free(cc);
	if (have_res)
		cw_explain_result_free(&res);
	cw_server_close_db(db);
}
