/* The cgroups a trace has seen (registry.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tenant/cgroup_row.h"
#include "tenant/pressure.h"
#include "tenant/registry.h"
#include "util/u64map.h"

/* Per-id word in the map: state in bits 0-1, flags, the last pid seen in
 * the high half (the process whose /proc entry names the cgroup). */
#define ST_PENDING 1
#define ST_DONE 2
#define F_TOUCHED 4
#define F_OWN 8
#define PENDING_MAX (CW_TENANT_BATCH * 4)

struct cw_tenant_registry {
	struct u64map ids;
	uint64_t last_id; /* the previous record's: most records repeat it */
	int last_own;
	uint64_t pending[PENDING_MAX];
	int npending;
	uint64_t own[CW_TENANT_SAMPLED_MAX]; /* own cgroups, sampled for pressure */
	int nown;
	struct cw_tenant_stats st;
};

int cw_tenant_registry_new(struct cw_tenant_registry **out)
{
	struct cw_tenant_registry *r = calloc(1, sizeof(*r));
	int err;

	if (!r)
		return -ENOMEM;
	if ((err = u64map_init(&r->ids, CW_TENANT_MAX))) {
		free(r);
		return err;
	}
	*out = r;
	return 0;
}

void cw_tenant_registry_free(struct cw_tenant_registry *r)
{
	if (!r)
		return;
	u64map_free(&r->ids);
	free(r);
}

void cw_tenant_registry_note(struct cw_tenant_registry *r, uint64_t id, uint32_t pid, int own)
{
	int64_t v;
	uint64_t w;

	if (!r || !id || (id == r->last_id && own <= r->last_own))
		return;
	r->last_id = id;
	r->last_own = own;
	if (u64map_get(&r->ids, id, &v)) {
		w = (uint64_t)v | F_TOUCHED | (own ? F_OWN : 0);
		if (pid && (w & 3) == ST_PENDING)
			w = (w & 0xffffffffull) | ((uint64_t)pid << 32);
		if (w != (uint64_t)v)
			u64map_put(&r->ids, id, (int64_t)w);
		return;
	}
	if (r->npending == PENDING_MAX || u64map_put(&r->ids, id, (int64_t)(ST_PENDING | F_TOUCHED |
									       (own ? F_OWN : 0) |
									       ((uint64_t)pid << 32)))) {
		r->st.overflow++;
		return;
	}
	r->pending[r->npending++] = id;
}

static void add_own(struct cw_tenant_registry *r, uint64_t id)
{
	for (int i = 0; i < r->nown; i++)
		if (r->own[i] == id)
			return;
	if (r->nown < CW_TENANT_SAMPLED_MAX)
		r->own[r->nown++] = id;
}

int cw_tenant_registry_take(struct cw_tenant_registry *r, struct cw_tenant_batch *b, int pressure)
{
	int n = r->npending < CW_TENANT_BATCH ? r->npending : CW_TENANT_BATCH;
	int64_t v;

	b->n = 0;
	b->nsample = 0;
	b->info = NULL;
	if (n) {
		b->info = calloc((size_t)n, sizeof(*b->info));
		if (!b->info)
			return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		b->ids[i] = r->pending[i];
		b->pids[i] = u64map_get(&r->ids, r->pending[i], &v) ? (uint32_t)((uint64_t)v >> 32) : 0;
		b->ok[i] = 0;
	}
	b->n = n;
	memmove(r->pending, r->pending + n, (size_t)(r->npending - n) * sizeof(r->pending[0]));
	r->npending -= n;
	/* The traced processes' own cgroups seen since the last sample. */
	for (int i = 0; pressure && i < r->nown && b->nsample < CW_TENANT_SAMPLED_MAX; i++)
		if (u64map_get(&r->ids, r->own[i], &v) && ((uint64_t)v & F_TOUCHED)) {
			b->sample_ids[b->nsample] = r->own[i];
			b->sample_pids[b->nsample] = (uint32_t)((uint64_t)v >> 32);
			b->nsample++;
		}
	return 0;
}

void cw_tenant_batch_resolve(struct cw_tenant_batch *b, uint64_t mono_ns, uint64_t wall_ns)
{
	const char *root = cw_cgroup2_root();
	int missing = 0;

	for (int i = 0; i < b->n; i++) {
		int err = b->pids[i] ? cw_tenant_resolve_pid(b->pids[i], b->ids[i], &b->info[i]) : -ENOENT;
		b->ok[i] = !err;
		missing += !b->ok[i];
	}
	/* The process is gone or has moved: find the directory by id (one
	 * walk for all of them). */
	for (int i = 0; missing && i < b->n; i++) {
		struct cw_cgroup_info *in = &b->info[i];
		uint32_t pid;

		if (b->ok[i])
			continue;
		memset(in, 0, sizeof(*in));
		if (cw_cgroup_path_of_id(root, b->ids[i], in->path, sizeof(in->path)) ||
		    cw_tenant_parse(in->path, &in->t))
			continue;
		in->id = b->ids[i];
		if ((pid = cw_cgroup_first_pid(root, in->path)))
			cw_pid_pod_env(pid, &in->t);
		b->ok[i] = 1;
	}
	for (int i = 0; i < b->nsample; i++) {
		struct cw_pressure_row *s = &b->samples[i];
		char path[CW_CGPATH_MAX + 1];
		uint64_t id = 0;

		b->sample_ok[i] = 0;
		memset(s, 0, sizeof(*s));
		/* The path comes from the pid when it still lives there, else
		 * from a walk; a cgroup that is gone has nothing to sample. */
		if ((cw_pid_cgroup_path(b->sample_pids[i], path, sizeof(path)) || cw_cgroup_id_of(root, path, &id) ||
		     id != b->sample_ids[i]) &&
		    cw_cgroup_path_of_id(root, b->sample_ids[i], path, sizeof(path)))
			continue;
		if (cw_cgroup_pressure_read(path, b->sample_pids[i], s))
			continue;
		s->cgroup_id = b->sample_ids[i];
		s->mono_ns = mono_ns;
		s->wall_ns = wall_ns;
		b->sample_ok[i] = 1;
	}
}

int cw_tenant_registry_pending(const struct cw_tenant_registry *r)
{
	return r->npending > 0;
}

void cw_tenant_registry_commit(struct cw_tenant_registry *r, struct cw_tenant_batch *b, struct cw_writer *w,
			       uint64_t wall_ns, int seen)
{
	struct u64map *m = &r->ids;

	for (int i = 0; i < b->n; i++) {
		int64_t v = 0;
		uint64_t word;

		u64map_get(m, b->ids[i], &v);
		word = ((uint64_t)v & ~3ull) | ST_DONE;
		u64map_put(m, b->ids[i], (int64_t)word);
		if (!b->ok[i]) {
			r->st.unresolved++;
			continue;
		}
		struct cw_cgroup_row row = {
			.cgroup_id = b->ids[i], .path = b->info[i].path, .t = &b->info[i].t, .seen_wall_ns = wall_ns,
		};
		cw_tenant_write_cgroup(w, &row);
		r->st.resolved++;
	}
	for (int i = 0; i < b->nsample; i++)
		if (b->sample_ok[i]) {
			cw_writer_cgroup_pressure(w, &b->samples[i]);
			r->st.sampled++;
		}
	/* Last seen: every resolved cgroup touched since the last commit. An
	 * own cgroup that was noted only as a neighbour first is promoted to
	 * sampling here. */
	for (size_t k = 0; seen && k < m->cap; k++) {
		uint64_t word = (uint64_t)m->vals[k];

		if (!m->keys[k] || !(word & F_TOUCHED) || (word & 3) != ST_DONE)
			continue;
		cw_writer_cgroup_seen(w, m->keys[k], wall_ns);
		if (word & F_OWN)
			add_own(r, m->keys[k]);
		m->vals[k] = (int64_t)(word & ~(uint64_t)F_TOUCHED);
	}
	r->last_id = 0;
	free(b->info);
	b->info = NULL;
	b->n = 0;
}

void cw_tenant_registry_stats(const struct cw_tenant_registry *r, struct cw_tenant_stats *s)
{
	*s = r->st;
}
