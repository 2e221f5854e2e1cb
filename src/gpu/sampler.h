/* The GPU telemetry thread of trace: samples every NVML device each
 * interval, reads Xid faults from the kernel log (/dev/kmsg) and from
 * NVML's critical event set, deduplicates them, and hands everything to
 * a sink. The sink is called from the sampler thread; it takes whatever
 * lock its store needs. */
#ifndef CW_GPU_SAMPLER_H
#define CW_GPU_SAMPLER_H

#include <stdint.h>

#include "gpu/gpu.h"
#include "gpu/xid.h"

struct cw_gpu_sink {
	void *ctx;
	void (*device)(void *ctx, const struct cw_gpu_device *d, const char *driver);
	/* One call per interval with every device's sample. */
	void (*samples)(void *ctx, const struct cw_gpu_sample *s, int n, const struct cw_gpu_device *devs);
	void (*process)(void *ctx, int device, uint64_t mono_ns, uint64_t wall_ns, const struct cw_gpu_proc *p);
	/* device -1 when the fault's PCI address matches no NVML device;
	 * from is "kmsg" or "nvml". */
	void (*xid)(void *ctx, const struct cw_xid *x, int device, uint64_t mono_ns, const char *from);
};

struct cw_gpu_sampler_opts {
	uint64_t interval_ns;  /* 0: 1 s */
	const char *nvml_path; /* NULL: $CW_NVML_LIB or libnvidia-ml.so.1 */
	const char *kmsg_path; /* NULL: /dev/kmsg; "" disables */
	int no_processes;
};

struct cw_gpu_sampler_stats {
	uint64_t intervals, samples, sample_ns; /* sample_ns: time spent in NVML */
	uint64_t xid_kmsg, xid_nvml, xid_duplicates, kmsg_rejected, kmsg_records;
	int ndev, nvml, kmsg, events; /* sources that opened */
};

struct cw_gpu_sampler;

/* Starts the thread. Absent NVML and kmsg are not errors: stats say what
 * opened; why gets the NVML reason when it did not. */
int cw_gpu_sampler_start(struct cw_gpu_sampler **out, const struct cw_gpu_sampler_opts *o,
			 const struct cw_gpu_sink *sink, char *why, size_t whylen);
void cw_gpu_sampler_stats(struct cw_gpu_sampler *s, struct cw_gpu_sampler_stats *out);
/* Stops and joins the thread; NULL is fine. */
void cw_gpu_sampler_stop(struct cw_gpu_sampler *s);

#endif
