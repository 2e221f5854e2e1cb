/* Tenant filters over a database (tenant_select.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/tenant_select.h"
#include "store/store.h"
#include "util/vec.h"

struct row {
	uint64_t id;
	char *path;
	int in;
};

static void col(sqlite3_stmt *st, int i, char *dst, size_t len)
{
	const unsigned char *v = sqlite3_column_text(st, i);

	snprintf(dst, len, "%s", v ? (const char *)v : "");
}

int cw_tenant_select_cgroups(sqlite3 *db, const struct cw_tenant_filter *f, int nf, uint64_t **ids)
{
	sqlite3_stmt *st = NULL;
	struct row *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t *out;
	int rc, k = 0;

	*ids = NULL;
	rc = sqlite3_prepare_v2(db,
				"SELECT DISTINCT cgroup_id, path, container_id, pod, pod_uid, slurm_job, namespace FROM cgroups"
				" WHERE path IS NOT NULL",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct cw_tenant t;
		const char *path = (const char *)sqlite3_column_text(st, 1);
		uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);

		memset(&t, 0, sizeof(t));
		col(st, 2, t.container_id, sizeof(t.container_id));
		col(st, 3, t.pod, sizeof(t.pod));
		col(st, 4, t.pod_uid, sizeof(t.pod_uid));
		col(st, 5, t.slurm_job, sizeof(t.slurm_job));
		col(st, 6, t.ns, sizeof(t.ns));
		if (cw_vec_reserve(&v, &cap, n + 1, sizeof(*v), 64) < 0) {
			rc = SQLITE_NOMEM;
			break;
		}
		v[n].id = id;
		v[n].path = strdup(path);
		v[n].in = 0;
		if (!v[n].path) {
			rc = SQLITE_NOMEM;
			break;
		}
		/* A path filter covers the cgroups under it even when the
		 * directory itself (a slice) never ran a traced thread. */
		for (int i = 0; i < nf && !v[n].in; i++)
			v[n].in = cw_tenant_match(&f[i], id, path, &t) ||
				  (f[i].kind == CW_TF_CGROUP_PATH && cw_cgpath_covers(f[i].value, path));
		n++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		k = cw_sqlite_errno(rc);
		goto out;
	}
	/* Descendants of a matched cgroup are the tenant's too. */
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n && !v[i].in; j++)
			if (v[j].in && i != j && cw_cgpath_covers(v[j].path, v[i].path))
				v[i].in = 2;
	out = malloc((n ? n : 1) * sizeof(*out));
	if (!out) {
		k = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (v[i].in)
			out[k++] = v[i].id;
	*ids = out;
out:
	for (size_t i = 0; i < n; i++)
		free(v[i].path);
	free(v);
	return k;
}

static int add_pid(int64_t *v, int *n, int64_t pid)
{
	for (int i = 0; i < *n; i++)
		if (v[i] == pid)
			return 0;
	if (*n == CW_TENANT_SELECT_PIDS)
		return 0;
	v[(*n)++] = pid;
	return 1;
}

/* The pids that ran in those cgroups (processes rows, else events).
 * Returns the count or -errno. */
static int cw_tenant_select_pids(sqlite3 *db, const uint64_t *ids, int nids, int64_t **pids)
{
	/* Then, for a process without a row (a demo's neighbour, an old
	 * trace), its events. */
	static const char proc_sql[] = "SELECT DISTINCT pid FROM processes WHERE cgroup_id = ?1";
	const char *ev_sql;
	int64_t *v;
	int n = 0, rc = SQLITE_OK, err;

	*pids = NULL;
	if ((err = cw_store_read_sql(db, CW_READ_CGROUP_PIDS, &ev_sql)) < 0)
		return err;
	v = malloc(CW_TENANT_SELECT_PIDS * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (int i = 0; i < nids && rc == SQLITE_OK; i++) {
		int before = n;
		for (int k = 0; k < 2 && n == before; k++) {
			sqlite3_stmt *st = NULL;
			if ((rc = sqlite3_prepare_v2(db, k ? ev_sql : proc_sql, -1, &st, NULL)) != SQLITE_OK)
				break;
			sqlite3_bind_int64(st, 1, (int64_t)ids[i]);
			while ((rc = sqlite3_step(st)) == SQLITE_ROW)
				add_pid(v, &n, sqlite3_column_int64(st, 0));
			sqlite3_finalize(st);
			rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
		}
	}
	if (rc != SQLITE_OK) {
		free(v);
		return cw_sqlite_errno(rc);
	}
	*pids = v;
	return n;
}

int cw_tenant_select(sqlite3 *db, const struct cw_tenant_filter *f, int nf, int64_t **pids)
{
	uint64_t *ids = NULL;
	int rc;

	*pids = NULL;
	if ((rc = cw_tenant_select_cgroups(db, f, nf, &ids)) > 0)
		rc = cw_tenant_select_pids(db, ids, rc, pids);
	free(ids);
	return rc;
}
