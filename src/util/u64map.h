/* u64map: an open-addressing hash map from non-zero uint64 keys to int64
 * values. Used for interning caches (stack hash -> row id) and pairing
 * tables, where a general-purpose map would cost more than the work. */
#ifndef CW_UTIL_U64MAP_H
#define CW_UTIL_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct u64map {
	uint64_t *keys; /* 0 marks an empty slot */
	int64_t *vals;
	size_t cap;     /* power of two */
	size_t len;
	size_t max_len; /* entries beyond this are refused: -ENOSPC */
};

int u64map_init(struct u64map *m, size_t max_len);
void u64map_free(struct u64map *m);
/* Returns 1 and sets *val when found, 0 when absent. */
int u64map_get(const struct u64map *m, uint64_t key, int64_t *val);
/* Inserts or replaces. Returns 0, -EINVAL for key 0, -ENOSPC, -ENOMEM. */
int u64map_put(struct u64map *m, uint64_t key, int64_t val);
void u64map_clear(struct u64map *m);

/* 64-bit FNV-1a, continued from h (start with CW_FNV_INIT). */
#define CW_FNV_INIT 0xcbf29ce484222325ULL
uint64_t cw_fnv1a(uint64_t h, const void *data, size_t len);

#endif
