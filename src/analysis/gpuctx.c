#include "analysis/gpuctx.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "util/vec.h"

static int64_t col_or(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
}

static int table_missing(sqlite3 *db, int rc)
{
	return rc == SQLITE_ERROR && strstr(sqlite3_errmsg(db), "no such table");
}

static int load_devices(sqlite3 *db, const char *node, struct cw_gpuctx *g)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db,
				    "SELECT device, name, pci_bus_id, uuid, max_sm_mhz, memory_total, power_limit_mw"
				    " FROM gpu_devices WHERE node = ?1 ORDER BY device",
				    -1, &st, NULL);

	if (rc != SQLITE_OK)
		return table_missing(db, rc) ? 0 : cw_sqlite_errno(rc);
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && g->ndev < CW_GPU_MAX) {
		struct cw_gdev *d = &g->dev[g->ndev++];
		const char *s;
		d->device = sqlite3_column_int(st, 0);
		s = (const char *)sqlite3_column_text(st, 1);
		snprintf(d->name, sizeof(d->name), "%s", s ? s : "");
		s = (const char *)sqlite3_column_text(st, 2);
		snprintf(d->pci, sizeof(d->pci), "%s", s ? s : "");
		s = (const char *)sqlite3_column_text(st, 3);
		snprintf(d->uuid, sizeof(d->uuid), "%s", s ? s : "");
		d->max_sm_mhz = col_or(st, 4);
		d->mem_total = col_or(st, 5);
		d->power_limit_mw = col_or(st, 6);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : cw_sqlite_errno(rc);
}

static int cmp_sample(const void *a, const void *b)
{
	const struct cw_gsample *x = a, *y = b;

	if (x->device != y->device)
		return x->device - y->device;
	return x->mono < y->mono ? -1 : x->mono > y->mono;
}

int cw_gpuctx_load(sqlite3 *db, const char *node, uint64_t from_wall, uint64_t to_wall, struct cw_gpuctx *g)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	int rc, ret;

	memset(g, 0, sizeof(*g));
	if ((ret = load_devices(db, node, g)) < 0)
		return ret;
	/* One sample of margin on both sides covers calls at the edges. */
	rc = sqlite3_prepare_v2(db,
				"SELECT device, mono_ns, wall_ns, sm_mhz, clock_reasons, mem_used, mem_total, temp_gpu,"
				" power_mw FROM gpu_samples WHERE node = ?1 AND wall_ns BETWEEN ?2 AND ?3",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return table_missing(db, rc) ? 0 : cw_sqlite_errno(rc);
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)(from_wall > CW_GPU_SAMPLE_SPAN_MAX_NS ? from_wall - CW_GPU_SAMPLE_SPAN_MAX_NS : 0));
	sqlite3_bind_int64(st, 3, (int64_t)(to_wall + CW_GPU_SAMPLE_SPAN_MAX_NS));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct cw_gsample *s;
		if (cw_vec_reserve(&g->v, &cap, g->n + 1, sizeof(*g->v), 256) < 0) {
			sqlite3_finalize(st);
			cw_gpuctx_free(g);
			return -ENOMEM;
		}
		s = &g->v[g->n++];
		s->device = sqlite3_column_int(st, 0);
		s->mono = (uint64_t)sqlite3_column_int64(st, 1);
		s->wall = (uint64_t)sqlite3_column_int64(st, 2);
		s->sm_mhz = col_or(st, 3);
		s->reasons = col_or(st, 4);
		s->mem_used = col_or(st, 5);
		s->mem_total = col_or(st, 6);
		s->temp = col_or(st, 7);
		s->power_mw = col_or(st, 8);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		cw_gpuctx_free(g);
		return cw_sqlite_errno(rc);
	}
	if (g->n)
		qsort(g->v, g->n, sizeof(*g->v), cmp_sample);
	for (size_t i = 0; i < g->n; i++) {
		uint64_t cap_end = g->v[i].mono + CW_GPU_SAMPLE_SPAN_MAX_NS;
		uint64_t next = i + 1 < g->n && g->v[i + 1].device == g->v[i].device ? g->v[i + 1].mono : cap_end;
		g->v[i].end = next < cap_end ? next : cap_end;
	}
	return 0;
}

void cw_gpuctx_free(struct cw_gpuctx *g)
{
	if (!g)
		return;
	free(g->v);
	memset(g, 0, sizeof(*g));
}

const struct cw_gdev *cw_gpuctx_dev(const struct cw_gpuctx *g, int device)
{
	for (int i = 0; i < g->ndev; i++)
		if (g->dev[i].device == device)
			return &g->dev[i];
	return NULL;
}

uint64_t cw_gpuctx_overlap(const struct cw_gpuctx *g, int device, uint64_t s, uint64_t e, cw_gsample_pred pred,
			   const struct cw_gsample **hit)
{
	uint64_t total = 0;

	/* Samples are few (one per device per second): a linear pass per
	 * device range is cheap next to reading the calls. */
	for (size_t i = 0; i < g->n; i++) {
		const struct cw_gsample *x = &g->v[i];
		uint64_t lo, hi;

		if (device >= 0 && x->device != device)
			continue;
		if (x->end <= s || x->mono >= e || !pred(x))
			continue;
		lo = x->mono > s ? x->mono : s;
		hi = x->end < e ? x->end : e;
		if (hi > lo) {
			total += hi - lo;
			if (hit && !*hit)
				*hit = x;
		}
	}
	/* Two devices throttled at once must not count the call twice. */
	return total > e - s ? e - s : total;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

int64_t cw_gpuctx_median_clock(const struct cw_gpuctx *g, int device, cw_gsample_pred pred)
{
	int64_t *v = malloc((g->n ? g->n : 1) * sizeof(*v)), m;
	size_t n = 0;

	if (!v)
		return -1;
	for (size_t i = 0; i < g->n; i++)
		if ((device < 0 || g->v[i].device == device) && g->v[i].sm_mhz >= 0 && pred(&g->v[i]))
			v[n++] = g->v[i].sm_mhz;
	if (!n) {
		free(v);
		return -1;
	}
	qsort(v, n, sizeof(*v), cmp_i64);
	m = v[n / 2];
	free(v);
	return m;
}
