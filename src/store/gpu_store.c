#include "store/gpu_store.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"

struct cw_gpu_store {
	sqlite3 *db;
	char node[64];
	int64_t session_id;
	sqlite3_stmt *dev, *sample, *proc;
};

int cw_gpu_store_new(struct cw_gpu_store **out, sqlite3 *db, const char *node, int64_t session_id)
{
	struct cw_gpu_store *gs = calloc(1, sizeof(*gs));
	int rc;

	*out = NULL;
	if (!gs)
		return -ENOMEM;
	gs->db = db;
	snprintf(gs->node, sizeof(gs->node), "%s", node);
	gs->session_id = session_id;
	rc = sqlite3_prepare_v2(db,
				"INSERT INTO gpu_devices (node, uuid, device, pci_bus_id, name, memory_total, power_limit_mw,"
				" max_sm_mhz, max_mem_mhz, mig, parent, driver, first_wall_ns)"
				" VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)"
				" ON CONFLICT (node, uuid) DO UPDATE SET device = ?3, pci_bus_id = ?4, name = ?5,"
				" memory_total = ?6, power_limit_mw = ?7, max_sm_mhz = ?8, max_mem_mhz = ?9, mig = ?10,"
				" parent = ?11, driver = ?12",
				-1, &gs->dev, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db,
					"INSERT INTO gpu_samples (node, session_id, device, uuid, mono_ns, wall_ns, gpu_util,"
					" mem_util, mem_used, mem_free, mem_reserved, mem_total, temp_gpu, temp_mem, power_mw,"
					" energy_mj, sm_mhz, mem_mhz, clock_reasons, ecc_sbe, ecc_dbe, pcie_replay, retired_sbe,"
					" retired_dbe, remap_corr, remap_unc, remap_pending, remap_failure, nvlink_errors)"
					" VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,"
					"?22,?23,?24,?25,?26,?27,?28,?29)",
					-1, &gs->sample, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db,
					"INSERT INTO gpu_processes (node, session_id, device, mono_ns, wall_ns, pid, used_bytes,"
					" sm_util, mem_util) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)",
					-1, &gs->proc, NULL);
	if (rc != SQLITE_OK) {
		cw_gpu_store_free(gs);
		return cw_sqlite_errno(rc);
	}
	*out = gs;
	return 0;
}

void cw_gpu_store_free(struct cw_gpu_store *gs)
{
	if (!gs)
		return;
	sqlite3_finalize(gs->dev);
	sqlite3_finalize(gs->sample);
	sqlite3_finalize(gs->proc);
	free(gs);
}

static void bind_opt(sqlite3_stmt *s, int i, int64_t v)
{
	if (v < 0)
		sqlite3_bind_null(s, i);
	else
		sqlite3_bind_int64(s, i, v);
}

static int step(sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);

	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

int cw_gpu_store_device(struct cw_gpu_store *gs, const struct cw_gpu_device *d, const char *driver,
			uint64_t wall_ns)
{
	sqlite3_stmt *s = gs->dev;

	sqlite3_bind_text(s, 1, gs->node, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, d->uuid, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(s, 3, d->index);
	if (d->pci[0])
		sqlite3_bind_text(s, 4, d->pci, -1, SQLITE_TRANSIENT);
	if (d->name[0])
		sqlite3_bind_text(s, 5, d->name, -1, SQLITE_TRANSIENT);
	bind_opt(s, 6, d->mem_total);
	bind_opt(s, 7, d->power_limit_mw);
	bind_opt(s, 8, d->max_sm_mhz);
	bind_opt(s, 9, d->max_mem_mhz);
	sqlite3_bind_int(s, 10, d->mig);
	bind_opt(s, 11, d->parent);
	if (driver && *driver)
		sqlite3_bind_text(s, 12, driver, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 13, (int64_t)wall_ns);
	return step(s);
}

int cw_gpu_store_sample(struct cw_gpu_store *gs, const struct cw_gpu_sample *x, const char *uuid)
{
	sqlite3_stmt *s = gs->sample;
	struct cw_gpu_sample copy = *x;

	sqlite3_bind_text(s, 1, gs->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, gs->session_id);
	sqlite3_bind_int(s, 3, x->device);
	if (uuid)
		sqlite3_bind_text(s, 4, uuid, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 5, (int64_t)x->mono_ns);
	sqlite3_bind_int64(s, 6, (int64_t)x->wall_ns);
	/* gpu_util .. nvlink_errors (columns 7..29), in struct order. */
	for (int i = 0; i < CW_GPU_NREADINGS; i++)
		bind_opt(s, 7 + i, *cw_gpu_reading(&copy, i));
	return step(s);
}

int cw_gpu_store_process(struct cw_gpu_store *gs, int device, uint64_t mono_ns, uint64_t wall_ns,
			 const struct cw_gpu_proc *p)
{
	sqlite3_stmt *s = gs->proc;

	sqlite3_bind_text(s, 1, gs->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, gs->session_id);
	sqlite3_bind_int(s, 3, device);
	sqlite3_bind_int64(s, 4, (int64_t)mono_ns);
	sqlite3_bind_int64(s, 5, (int64_t)wall_ns);
	sqlite3_bind_int64(s, 6, p->pid);
	bind_opt(s, 7, p->used_bytes);
	bind_opt(s, 8, p->sm_util);
	bind_opt(s, 9, p->mem_util);
	return step(s);
}
