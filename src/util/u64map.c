#include "util/u64map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static size_t slot_of(uint64_t key, size_t cap)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (size_t)key & (cap - 1);
}

int u64map_init(struct u64map *m, size_t max_len)
{
	memset(m, 0, sizeof(*m));
	m->max_len = max_len ? max_len : (size_t)1 << 24;
	return 0;
}

void u64map_free(struct u64map *m)
{
	free(m->keys);
	free(m->vals);
	m->keys = NULL;
	m->vals = NULL;
	m->cap = m->len = 0;
}

void u64map_clear(struct u64map *m)
{
	if (m->keys)
		memset(m->keys, 0, m->cap * sizeof(*m->keys));
	m->len = 0;
}

static int rehash(struct u64map *m, size_t ncap)
{
	uint64_t *ok = m->keys;
	int64_t *ov = m->vals;
	size_t ocap = m->cap, i;

	m->keys = calloc(ncap, sizeof(*m->keys));
	m->vals = calloc(ncap, sizeof(*m->vals));
	if (!m->keys || !m->vals) {
		free(m->keys);
		free(m->vals);
		m->keys = ok;
		m->vals = ov;
		return -ENOMEM;
	}
	m->cap = ncap;
	m->len = 0;
	for (i = 0; i < ocap; i++)
		if (ok[i])
			u64map_put(m, ok[i], ov[i]);
	free(ok);
	free(ov);
	return 0;
}

int u64map_get(const struct u64map *m, uint64_t key, int64_t *val)
{
	size_t i;

	if (!m->cap || !key)
		return 0;
	for (i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key) {
			*val = m->vals[i];
			return 1;
		}
		if (!m->keys[i])
			return 0;
	}
}

int u64map_put(struct u64map *m, uint64_t key, int64_t val)
{
	size_t i;
	int err;

	if (!key)
		return -EINVAL;
	if ((m->len + 1) * 4 >= m->cap * 3) {
		err = rehash(m, m->cap ? m->cap * 2 : 64);
		if (err)
			return err;
	}
	for (i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key) {
			m->vals[i] = val;
			return 0;
		}
		if (!m->keys[i])
			break;
	}
	if (m->len >= m->max_len)
		return -ENOSPC;
	m->keys[i] = key;
	m->vals[i] = val;
	m->len++;
	return 0;
}

uint64_t cw_fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}
