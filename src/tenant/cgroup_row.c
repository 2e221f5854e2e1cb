#include "tenant/cgroup_row.h"

#include <string.h>

static const char *nz(const char *s)
{
	return s && s[0] ? s : NULL;
}

int cw_tenant_write_cgroup(struct cw_writer *w, const struct cw_cgroup_row *r)
{
	const struct cw_tenant *t = r->t;
	char key[CW_CGPATH_MAX + 16];
	struct cw_cgroup_ident c = {
		.cgroup_id = r->cgroup_id,
		.path = r->path,
		.container = nz(r->container) ? r->container : nz(t->container_id),
		.runtime = nz(t->runtime),
		.container_id = nz(t->container_id),
		.pod = nz(t->pod),
		.pod_uid = nz(t->pod_uid),
		.ns = nz(t->ns),
		.qos = nz(t->qos),
		.slurm_job = nz(t->slurm_job),
		.slurm_step = nz(t->slurm_step),
		.unit = nz(t->unit),
		.tenant = key,
		.seen_wall_ns = r->seen_wall_ns,
	};

	cw_tenant_key(t, r->path, key, sizeof(key));
	return cw_writer_cgroup_ident(w, &c);
}

int cw_tenant_write_cgroup_path(struct cw_writer *w, uint64_t cgroup_id, const char *path, const char *container)
{
	struct cw_cgroup_row r = { .cgroup_id = cgroup_id, .path = path, .container = container };
	struct cw_tenant t;

	if (!path || cw_tenant_parse(path, &t))
		memset(&t, 0, sizeof(t));
	r.t = &t;
	return cw_tenant_write_cgroup(w, &r);
}
