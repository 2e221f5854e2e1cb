/* Tenant filters of the API routes (docs/api.md): container=, pod=,
 * namespace=, cgroup=, slurm_job=, each repeatable, parsed by the same
 * parser as the command-line flags, and per_tenant=1. */
#define _GNU_SOURCE
#include "server/routes_api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static enum MHD_Result tenant_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct cw_api_tenant_args *t = cls;
	int rc;

	(void)kind;
	if (!key || t->rc)
		return MHD_YES;
	rc = cw_scope_tenant(&t->s, key, value, t->err, sizeof(t->err));
	if (rc && rc != -ENOENT)
		t->rc = rc;
	return MHD_YES;
}

int cw_api_tenant_args(struct MHD_Connection *c, struct cw_api_tenant_args *t, struct cw_reply *r)
{
	memset(t, 0, sizeof(*t));
	t->s.names = CW_SCOPE_PARAMS;
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, tenant_arg, t);
	if (t->rc) {
		cw_reply_error(r, 400, "%s", t->err);
		return -EINVAL;
	}
	return 0;
}

int cw_api_tenant_pids(sqlite3 *db, struct cw_api_tenant_args *t, int64_t **pids, int *npids)
{
	int rc = cw_scope_select(db, &t->s);

	/* The caller owns the pids. */
	*pids = t->s.pids;
	*npids = t->s.npids;
	t->s.pids = NULL;
	return rc;
}

void cw_api_tenant_key(const struct cw_api_tenant_args *t, char *out, size_t len)
{
	size_t used = 0;

	out[0] = '\0';
	for (int i = 0; i < t->s.ntf && used < len; i++) {
		int w = snprintf(out + used, len - used, "%d:%s:%llu;", (int)t->s.tf[i].kind, t->s.tf[i].value,
				 (unsigned long long)t->s.tf[i].id);
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
