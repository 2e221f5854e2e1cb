/* Allowed cgroups of tenant filters on the live host (allow.h). */
#include <errno.h>
#include <string.h>

#include "tenant/allow.h"
#include "tenant/resolve.h"

int cw_tenant_allow_init(struct cw_tenant_allow *a)
{
	int err;

	memset(a, 0, sizeof(*a));
	if ((err = u64map_init(&a->ids, 1u << 20)))
		return err;
	if ((err = u64map_init(&a->pods, 4096))) {
		u64map_free(&a->ids);
		return err;
	}
	return 0;
}

void cw_tenant_allow_free(struct cw_tenant_allow *a)
{
	u64map_free(&a->ids);
	u64map_free(&a->pods);
}

int cw_tenant_allow_has(const struct cw_tenant_allow *a, uint64_t id)
{
	int64_t v;

	return u64map_get(&a->ids, id, &v);
}

struct scan {
	struct cw_tenant_allow *a;
	const char *root;
	int (*on_new)(void *, uint64_t);
	void *ctx;
	int matched[CW_CGWALK_DEPTH + 2]; /* per depth: this level or an ancestor matched */
	int total, err;
};

static uint64_t pod_hash(const char *uid)
{
	uint64_t h = cw_fnv1a(CW_FNV_INIT, uid, strlen(uid));

	return h ? h : 1;
}

static int matches(struct scan *s, uint64_t id, const char *path)
{
	struct cw_tenant_allow *a = s->a;
	struct cw_tenant t;
	int64_t v;

	if (cw_tenant_parse(path, &t))
		return 0;
	for (int i = 0; i < a->nf; i++) {
		const struct cw_tenant_filter *f = &a->f[i];

		if (cw_tenant_match(f, id, path, &t))
			return 1;
		if (f->kind != CW_TF_POD || !t.pod_uid[0])
			continue;
		/* --pod NAME: the name is in a container's environment; once
		 * one container of a pod told it, the pod's every cgroup is in. */
		if (u64map_get(&a->pods, pod_hash(t.pod_uid), &v))
			return 1;
		if (t.container_id[0]) {
			uint32_t pid = cw_cgroup_first_pid(s->root, path);
			if (pid && !cw_pid_pod_env(pid, &t) && cw_tenant_match(f, id, path, &t)) {
				u64map_put(&a->pods, pod_hash(t.pod_uid), 1);
				return 1;
			}
		}
	}
	return 0;
}

static int scan_cb(void *ctx, uint64_t id, const char *path, int depth)
{
	struct scan *s = ctx;
	int in = (depth > 0 && s->matched[depth - 1]) || matches(s, id, path);
	int64_t v;

	s->matched[depth] = in;
	if (!in)
		return 0;
	s->total++;
	if (u64map_get(&s->a->ids, id, &v))
		return 0;
	if (u64map_put(&s->a->ids, id, 1)) {
		s->err = -ENOSPC;
		return 1;
	}
	if (s->on_new && (s->err = s->on_new(s->ctx, id)))
		return 1;
	return 0;
}

int cw_tenant_allow_scan(struct cw_tenant_allow *a, const char *root, int (*on_new)(void *ctx, uint64_t id),
			 void *ctx)
{
	struct scan s = { .a = a, .root = root, .on_new = on_new, .ctx = ctx };
	int n = cw_cgroup_walk(root, scan_cb, &s);

	if (n < 0)
		return n;
	a->scans++;
	a->walked += (uint64_t)n;
	/* A pod matched by name late (its first container started after its
	 * pod slice was walked) has its pod-level cgroups picked up by the
	 * next scan. */
	return s.err ? s.err : s.total;
}
