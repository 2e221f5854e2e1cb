/* NVML through dlopen: libnvidia-ml.so.1 is loaded at run time (no link
 * dependency), from $CW_NVML_LIB or the path given, else the loader's
 * search path. A host without the driver gets -ENOENT and a reason, which
 * `check` prints as "no GPU telemetry". Not thread-safe: one owner (the
 * sampler thread) calls it. */
#ifndef CW_GPU_NVML_H
#define CW_GPU_NVML_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/gpu.h"

struct cw_nvml;

/* path NULL: $CW_NVML_LIB, else "libnvidia-ml.so.1". Returns 0, -ENOENT
 * (library absent or missing its entry points) or -ENODEV (nvmlInit
 * failed: no driver loaded, no device), with why filled. */
int cw_nvml_open(struct cw_nvml **out, const char *path, char *why, size_t whylen);
void cw_nvml_close(struct cw_nvml *n);

const char *cw_nvml_driver(const struct cw_nvml *n); /* "" unknown */
const char *cw_nvml_path(const struct cw_nvml *n);   /* what was dlopen'ed */
int cw_nvml_count(const struct cw_nvml *n);
const struct cw_gpu_device *cw_nvml_device(const struct cw_nvml *n, int i);

/* Reads device i into s (fields NVML cannot give stay -1) and sanitizes
 * it. Returns the number of readings that succeeded, or -ENODEV when the
 * device is gone (NVML_ERROR_GPU_IS_LOST). */
int cw_nvml_sample(struct cw_nvml *n, int i, struct cw_gpu_sample *s);
/* Compute processes on device i with their memory and utilization, at
 * most cap. Returns the count or -errno. */
int cw_nvml_processes(struct cw_nvml *n, int i, struct cw_gpu_proc *out, int cap);

/* Registers the critical Xid event on every device that supports it.
 * Returns the number of devices registered (0: events unavailable). */
int cw_nvml_events_enable(struct cw_nvml *n);
/* Waits up to timeout_ms for one Xid event. Returns 1 with device and
 * code, 0 on timeout or no event set, -errno on error. */
int cw_nvml_event_wait(struct cw_nvml *n, unsigned timeout_ms, int *device, uint64_t *code);

#endif
