/* The writer's in-memory interning caches for narrow call rows (schema
 * v7): thread identities (call_threads rows) and detail texts (strings
 * rows), each found by a 64-bit hash and confirmed by comparing the full
 * key, so a hash collision costs a new row, never a wrong one. Both are
 * capped: past the cap a cache empties and fills again from new rows. */
#ifndef CW_STORE_KEYCACHE_H
#define CW_STORE_KEYCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "util/u64map.h"

/* What is constant for a thread over 2^31 ns of its calls. */
struct cw_tkey {
	uint32_t pid, tid;
	uint64_t cgroup_id;
	int32_t device;    /* -1 unknown */
	int64_t mono_base; /* multiple of 2^31 */
	int64_t wall_off;  /* wall - mono */
	const char *comm;  /* NULL unknown; copied by the cache */
};

#define CW_KEYCACHE_MAX 65536

struct cw_keycache {
	struct u64map map; /* hash -> index in v[] */
	struct cw_tkey *v;
	int64_t *ids;
	size_t n, alloc;
};

struct cw_strcache {
	struct u64map map; /* hash -> index in text[] */
	char **text;
	int64_t *ids;
	size_t n, alloc, bytes;
};

/* The base of the 2^31 ns stretch mono falls in. */
static inline int64_t cw_tkey_base(uint64_t mono)
{
	return (int64_t)((mono >> 31) << 31);
}

uint64_t cw_tkey_hash(const struct cw_tkey *k);
int cw_keycache_init(struct cw_keycache *c);
/* Returns 1 and the row id when k is cached. */
int cw_keycache_get(const struct cw_keycache *c, const struct cw_tkey *k, uint64_t hash, int64_t *id);
/* Caches k as row id; returns 0 or -ENOMEM (then nothing is cached). */
int cw_keycache_put(struct cw_keycache *c, const struct cw_tkey *k, uint64_t hash, int64_t id);
void cw_keycache_clear(struct cw_keycache *c);
void cw_keycache_free(struct cw_keycache *c);

/* An argument tuple of a call; seen-once tuples are cached with id 0. */
struct cw_argkey {
	int64_t a[4];
	int nargs;
};

struct cw_argcache {
	struct u64map map; /* hash -> index in v[] */
	struct cw_argkey *v;
	int64_t *ids;
	size_t n, alloc;
};

uint64_t cw_argkey_hash(const struct cw_argkey *k);
int cw_argcache_init(struct cw_argcache *c);
/* Returns 1 and the id (0: seen once, not interned) when k is cached. */
int cw_argcache_get(const struct cw_argcache *c, const struct cw_argkey *k, uint64_t hash, int64_t *id);
int cw_argcache_put(struct cw_argcache *c, const struct cw_argkey *k, uint64_t hash, int64_t id);
void cw_argcache_clear(struct cw_argcache *c);
void cw_argcache_free(struct cw_argcache *c);

uint64_t cw_str_hash(const char *s, size_t len);
int cw_strcache_init(struct cw_strcache *c);
int cw_strcache_get(const struct cw_strcache *c, const char *s, size_t len, uint64_t hash, int64_t *id);
int cw_strcache_put(struct cw_strcache *c, const char *s, size_t len, uint64_t hash, int64_t id);
void cw_strcache_clear(struct cw_strcache *c);
void cw_strcache_free(struct cw_strcache *c);

#endif
