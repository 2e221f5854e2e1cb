/* Tenant filters of the API routes (docs/api.md): container=, pod=,
 * namespace=, cgroup=, slurm_job=, each repeatable, parsed by the same
 * parser as the command-line flags, and per_tenant=1. */
#define _GNU_SOURCE
#include "server/routes_api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/tenant_select.h"

static enum MHD_Result tenant_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct cw_api_tenant_args *t = cls;
	int rc;

	(void)kind;
	if (!key || t->rc)
		return MHD_YES;
	rc = cw_tenant_filter_add(t->f, &t->n, CW_TENANT_FILTERS_MAX, key, value, t->err, sizeof(t->err));
	if (rc && rc != -ENOENT)
		t->rc = rc;
	return MHD_YES;
}

int cw_api_tenant_args(struct MHD_Connection *c, struct cw_api_tenant_args *t, struct cw_reply *r)
{
	memset(t, 0, sizeof(*t));
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, tenant_arg, t);
	if (t->rc) {
		/* "bad --pod ..." names the flag; the API names the parameter. */
		if (!strncmp(t->err, "bad --", 6))
			cw_reply_error(r, 400, "bad %s", t->err + 6);
		else
			cw_reply_error(r, 400, "%s", t->err);
		return -EINVAL;
	}
	return 0;
}

int cw_api_tenant_pids(sqlite3 *db, const struct cw_api_tenant_args *t, int64_t **pids, int *npids)
{
	int rc;

	*pids = NULL;
	*npids = 0;
	if (!t->n)
		return 0;
	rc = cw_tenant_select(db, t->f, t->n, pids);
	if (rc < 0)
		return rc;
	*npids = rc > 0 ? rc : -1;
	return 0;
}

void cw_api_tenant_key(const struct cw_api_tenant_args *t, char *out, size_t len)
{
	size_t used = 0;

	out[0] = '\0';
	for (int i = 0; i < t->n && used < len; i++) {
		int w = snprintf(out + used, len - used, "%d:%s:%llu;", (int)t->f[i].kind, t->f[i].value,
				 (unsigned long long)t->f[i].id);
		if (w < 0)
			break;
		used += (size_t)w;
	}
}

int cw_api_flag(struct MHD_Connection *c, const char *k)
{
	const char *v = cw_api_arg(c, k);

	return v && (!strcmp(v, "1") || !strcmp(v, "true"));
}
