/* Writing GPU telemetry: devices, samples and per-process device memory
 * (tables of the gpu migration, docs/schema.md). Shares the writer's
 * connection: rows join the writer's open batch and commit with it, so
 * the caller holds the same lock it holds for the writer. */
#ifndef CW_STORE_GPU_STORE_H
#define CW_STORE_GPU_STORE_H

#include <sqlite3.h>
#include <stdint.h>

#include "gpu/gpu.h"

struct cw_gpu_store;

int cw_gpu_store_new(struct cw_gpu_store **out, sqlite3 *db, const char *node, int64_t session_id);
void cw_gpu_store_free(struct cw_gpu_store *gs);
int cw_gpu_store_device(struct cw_gpu_store *gs, const struct cw_gpu_device *d, const char *driver,
			uint64_t wall_ns);
/* uuid may be NULL. Fields at -1 are stored as NULL. */
int cw_gpu_store_sample(struct cw_gpu_store *gs, const struct cw_gpu_sample *s, const char *uuid);
int cw_gpu_store_process(struct cw_gpu_store *gs, int device, uint64_t mono_ns, uint64_t wall_ns,
			 const struct cw_gpu_proc *p);

#endif
