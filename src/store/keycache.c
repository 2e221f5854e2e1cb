#include "store/keycache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Caps: a tracer of many short-lived threads or unique kernel names
 * keeps a bounded cache; what falls out is looked up or written again. */
#define STR_BYTES_MAX (16u << 20)

static uint64_t key0(uint64_t h)
{
	return h ? h : 1;
}

uint64_t cw_tkey_hash(const struct cw_tkey *k)
{
	uint64_t h = CW_FNV_INIT;

	h = cw_fnv1a(h, &k->pid, sizeof(k->pid));
	h = cw_fnv1a(h, &k->tid, sizeof(k->tid));
	h = cw_fnv1a(h, &k->cgroup_id, sizeof(k->cgroup_id));
	h = cw_fnv1a(h, &k->device, sizeof(k->device));
	h = cw_fnv1a(h, &k->mono_base, sizeof(k->mono_base));
	h = cw_fnv1a(h, &k->wall_off, sizeof(k->wall_off));
	if (k->comm)
		h = cw_fnv1a(h, k->comm, strlen(k->comm) + 1);
	return key0(h);
}

/* Room for one more entry in a cache's parallel arrays: *v of elem-byte
 * entries and *ids, both grown together. *v is updated even when *ids
 * cannot grow (realloc moved it). */
static int grow(void **v, int64_t **ids, size_t n, size_t *alloc, size_t elem)
{
	size_t a;
	void *nv;
	int64_t *nids;

	if (n < *alloc)
		return 0;
	a = *alloc ? *alloc * 2 : 64;
	nv = realloc(*v, a * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	nids = realloc(*ids, a * sizeof(*nids));
	if (!nids)
		return -ENOMEM;
	*ids = nids;
	*alloc = a;
	return 0;
}

static int same(const struct cw_tkey *a, const struct cw_tkey *b)
{
	if (a->pid != b->pid || a->tid != b->tid || a->cgroup_id != b->cgroup_id || a->device != b->device ||
	    a->mono_base != b->mono_base || a->wall_off != b->wall_off)
		return 0;
	if (!a->comm || !b->comm)
		return a->comm == b->comm;
	return !strcmp(a->comm, b->comm);
}

int cw_keycache_init(struct cw_keycache *c)
{
	memset(c, 0, sizeof(*c));
	return u64map_init(&c->map, CW_KEYCACHE_MAX);
}

int cw_keycache_get(const struct cw_keycache *c, const struct cw_tkey *k, uint64_t hash, int64_t *id)
{
	int64_t i;

	if (!u64map_get(&c->map, hash, &i) || !same(&c->v[i], k))
		return 0;
	*id = c->ids[i];
	return 1;
}

int cw_keycache_put(struct cw_keycache *c, const struct cw_tkey *k, uint64_t hash, int64_t id)
{
	char *comm = NULL;
	int64_t i;

	if (c->n >= CW_KEYCACHE_MAX)
		cw_keycache_clear(c);
	{
		void *v = c->v;
		int err = grow(&v, &c->ids, c->n, &c->alloc, sizeof(*c->v));

		c->v = v;
		if (err)
			return err;
	}
	if (k->comm && !(comm = strdup(k->comm)))
		return -ENOMEM;
	/* A colliding hash takes over the slot; the older key's row stays
	 * valid in the store, it is only no longer found here. */
	if (u64map_get(&c->map, hash, &i)) {
		free((char *)c->v[i].comm);
		c->v[i] = *k;
		c->v[i].comm = comm;
		c->ids[i] = id;
		return 0;
	}
	i = (int64_t)c->n;
	if (u64map_put(&c->map, hash, i)) {
		free(comm);
		return -ENOMEM;
	}
	c->v[i] = *k;
	c->v[i].comm = comm;
	c->ids[i] = id;
	c->n++;
	return 0;
}

void cw_keycache_clear(struct cw_keycache *c)
{
	for (size_t i = 0; i < c->n; i++)
		free((char *)c->v[i].comm);
	c->n = 0;
	u64map_clear(&c->map);
}

void cw_keycache_free(struct cw_keycache *c)
{
	cw_keycache_clear(c);
	free(c->v);
	free(c->ids);
	u64map_free(&c->map);
}

uint64_t cw_str_hash(const char *s, size_t len)
{
	return key0(cw_fnv1a(CW_FNV_INIT, s, len));
}

int cw_strcache_init(struct cw_strcache *c)
{
	memset(c, 0, sizeof(*c));
	return u64map_init(&c->map, CW_KEYCACHE_MAX);
}

int cw_strcache_get(const struct cw_strcache *c, const char *s, size_t len, uint64_t hash, int64_t *id)
{
	int64_t i;

	if (!u64map_get(&c->map, hash, &i) || strlen(c->text[i]) != len || memcmp(c->text[i], s, len))
		return 0;
	*id = c->ids[i];
	return 1;
}

int cw_strcache_put(struct cw_strcache *c, const char *s, size_t len, uint64_t hash, int64_t id)
{
	char *t;
	int64_t i;

	if (c->n >= CW_KEYCACHE_MAX || c->bytes + len > STR_BYTES_MAX)
		cw_strcache_clear(c);
	{
		void *v = c->text;
		int err = grow(&v, &c->ids, c->n, &c->alloc, sizeof(*c->text));

		c->text = v;
		if (err)
			return err;
	}
	t = malloc(len + 1);
	if (!t)
		return -ENOMEM;
	memcpy(t, s, len);
	t[len] = '\0';
	if (u64map_get(&c->map, hash, &i)) {
		c->bytes -= strlen(c->text[i]);
		free(c->text[i]);
		c->text[i] = t;
		c->ids[i] = id;
		c->bytes += len;
		return 0;
	}
	i = (int64_t)c->n;
	if (u64map_put(&c->map, hash, i)) {
		free(t);
		return -ENOMEM;
	}
	c->text[i] = t;
	c->ids[i] = id;
	c->bytes += len;
	c->n++;
	return 0;
}

void cw_strcache_clear(struct cw_strcache *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->text[i]);
	c->n = 0;
	c->bytes = 0;
	u64map_clear(&c->map);
}

void cw_strcache_free(struct cw_strcache *c)
{
	cw_strcache_clear(c);
	free(c->text);
	free(c->ids);
	u64map_free(&c->map);
}

uint64_t cw_argkey_hash(const struct cw_argkey *k)
{
	uint64_t h = cw_fnv1a(CW_FNV_INIT, &k->nargs, sizeof(k->nargs));

	return key0(cw_fnv1a(h, k->a, (size_t)k->nargs * sizeof(k->a[0])));
}

static int args_same(const struct cw_argkey *x, const struct cw_argkey *y)
{
	return x->nargs == y->nargs && !memcmp(x->a, y->a, (size_t)x->nargs * sizeof(x->a[0]));
}

int cw_argcache_init(struct cw_argcache *c)
{
	memset(c, 0, sizeof(*c));
	return u64map_init(&c->map, CW_KEYCACHE_MAX);
}

int cw_argcache_get(const struct cw_argcache *c, const struct cw_argkey *k, uint64_t hash, int64_t *id)
{
	int64_t i;

	if (!u64map_get(&c->map, hash, &i) || !args_same(&c->v[i], k))
		return 0;
	*id = c->ids[i];
	return 1;
}

int cw_argcache_put(struct cw_argcache *c, const struct cw_argkey *k, uint64_t hash, int64_t id)
{
	int64_t i;

	if (c->n >= CW_KEYCACHE_MAX)
		cw_argcache_clear(c);
	if (u64map_get(&c->map, hash, &i)) {
		c->v[i] = *k;
		c->ids[i] = id;
		return 0;
	}
	{
		void *v = c->v;
		int err = grow(&v, &c->ids, c->n, &c->alloc, sizeof(*c->v));

		c->v = v;
		if (err)
			return err;
	}
	i = (int64_t)c->n;
	if (u64map_put(&c->map, hash, i))
		return -ENOMEM;
	c->v[i] = *k;
	c->ids[i] = id;
	c->n++;
	return 0;
}

void cw_argcache_clear(struct cw_argcache *c)
{
	c->n = 0;
	u64map_clear(&c->map);
}

void cw_argcache_free(struct cw_argcache *c)
{
	free(c->v);
	free(c->ids);
	u64map_free(&c->map);
}
