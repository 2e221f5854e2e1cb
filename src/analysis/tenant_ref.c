/* Tenants in chains: the cgroups row of the affected thread and of the
 * culprit (docs/tenants.md). A database written before the tenant
 * migration has no identity columns: every tenant is then unknown. */
#include <stdio.h>
#include <string.h>

#include "analysis/engine.h"
#include "store/store.h"
#include "util/utf8.h"

static void col(sqlite3_stmt *st, int i, char *dst, size_t len)
{
	const unsigned char *v = sqlite3_column_text(st, i);

	snprintf(dst, len, "%s", v ? (const char *)v : "");
}

int cw_tenant_ref_load(sqlite3 *db, const char *node, uint64_t cgroup_id, struct cw_tenant_ref *out)
{
	sqlite3_stmt *st = NULL;

	memset(out, 0, sizeof(*out));
	out->cgroup_id = cgroup_id;
	if (!cgroup_id)
		return 0;
	if (sqlite3_prepare_v2(db,
			       "SELECT path, runtime, container_id, pod, pod_uid, namespace, qos, tenant, slurm_job"
			       " FROM cgroups WHERE cgroup_id = ?2 AND (?1 IS NULL OR node = ?1)"
			       " ORDER BY node = ?1 DESC LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	if (node)
		sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)cgroup_id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		out->known = 1;
		col(st, 0, out->cgroup, sizeof(out->cgroup));
		col(st, 1, out->runtime, sizeof(out->runtime));
		col(st, 2, out->id, sizeof(out->id));
		col(st, 3, out->pod, sizeof(out->pod));
		col(st, 4, out->pod_uid, sizeof(out->pod_uid));
		col(st, 5, out->ns, sizeof(out->ns));
		col(st, 6, out->qos, sizeof(out->qos));
		col(st, 7, out->key, sizeof(out->key));
		if (!out->id[0] && sqlite3_column_type(st, 8) != SQLITE_NULL)
			snprintf(out->id, sizeof(out->id), "slurm-job-%s", sqlite3_column_text(st, 8));
		if (!out->key[0])
			snprintf(out->key, sizeof(out->key), "cgroup:%.100s", out->cgroup);
	}
	sqlite3_finalize(st);
	return 0;
}

/* The cgroup the chain's calls ran in: its slow calls' (through the
 * partial index of anomalous calls), else the process row (written when
 * the process was enrolled: a launched command may move itself into its
 * cgroup after that), else any of its events. */
static uint64_t chain_cgroup(sqlite3 *db, const struct cw_chain *c)
{
	static const char proc_sql[] =
		"SELECT cgroup_id FROM processes WHERE node = ?1 AND pid = ?2 AND cgroup_id IS NOT NULL";
	static const enum cw_read ev[3] = { CW_READ_SLOW_CGROUP, CW_READ_COUNT, CW_READ_PID_CGROUP };
	uint64_t id = 0;

	for (int i = 0; i < 3 && !id; i++) {
		sqlite3_stmt *st = NULL;
		const char *sql = proc_sql;
		if ((i != 1 && cw_store_read_sql(db, ev[i], &sql)) ||
		    sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
			continue;
		sqlite3_bind_text(st, 1, c->node, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, c->pid);
		if (i == 0)
			sqlite3_bind_text(st, 3, c->op, -1, SQLITE_STATIC);
		if (sqlite3_step(st) == SQLITE_ROW)
			id = (uint64_t)sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	return id;
}

int cw_tenant_is_workload(const struct cw_tenant_ref *r)
{
	return r->known && (r->pod_uid[0] || (r->id[0] && strcmp(r->runtime, "systemd")));
}

void cw_chain_fill_tenants(sqlite3 *db, struct cw_chain *c)
{
	if (c->pid > 0)
		cw_tenant_ref_load(db, c->node, chain_cgroup(db, c), &c->container);
	if (c->culprit.known && c->culprit.cgroup_id)
		cw_tenant_ref_load(db, c->node, c->culprit.cgroup_id, &c->culprit.container);
}

json_t *cw_tenant_ref_json(const struct cw_tenant_ref *r)
{
	json_t *o;

	if (!r->known)
		return json_null();
#define S(v) ((v)[0] ? cw_json_str(v) : json_null())
	o = json_object();
	json_object_set_new(o, "runtime", S(r->runtime));
	json_object_set_new(o, "id", S(r->id));
	json_object_set_new(o, "pod", S(r->pod));
	json_object_set_new(o, "pod_uid", S(r->pod_uid));
	json_object_set_new(o, "namespace", S(r->ns));
	json_object_set_new(o, "cgroup", S(r->cgroup));
	json_object_set_new(o, "cgroup_id", json_integer((json_int_t)r->cgroup_id));
	json_object_set_new(o, "qos", S(r->qos));
#undef S
	return o;
}

void cw_tenant_ref_name(const struct cw_tenant_ref *r, char *buf, size_t len)
{
	if (r->pod[0] && r->ns[0])
		snprintf(buf, len, "pod %s/%s", r->ns, r->pod);
	else if (r->pod[0])
		snprintf(buf, len, "pod %s", r->pod);
	else if (r->id[0] && !strncmp(r->id, "slurm-job-", 10))
		snprintf(buf, len, "Slurm job %s", r->id + 10);
	else if (r->id[0])
		snprintf(buf, len, "%s container %.12s", r->runtime[0] ? r->runtime : "a", r->id);
	else if (r->pod_uid[0])
		snprintf(buf, len, "pod %s", r->pod_uid);
	else if (r->cgroup[0])
		snprintf(buf, len, "cgroup %s", r->cgroup);
	else
		snprintf(buf, len, "cgroup %llu", (unsigned long long)r->cgroup_id);
}
