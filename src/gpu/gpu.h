/* Device telemetry as causeway stores it: one sample per device per
 * interval, with every NVML reading that can be absent (a query the board
 * or driver does not support) kept as -1 rather than 0, so "no ECC
 * counter" never reads as "no ECC errors". */
#ifndef CW_GPU_GPU_H
#define CW_GPU_GPU_H

#include <stddef.h>
#include <stdint.h>

#define CW_GPU_MAX 64 /* devices (MIG instances included) per node */

/* Clock-event reason bits, NVML's nvmlClocksEventReason* values. */
#define CW_GPU_REASON_IDLE 0x1ULL
#define CW_GPU_REASON_APP_CLOCKS 0x2ULL
#define CW_GPU_REASON_SW_POWER_CAP 0x4ULL
#define CW_GPU_REASON_HW_SLOWDOWN 0x8ULL
#define CW_GPU_REASON_SYNC_BOOST 0x10ULL
#define CW_GPU_REASON_SW_THERMAL 0x20ULL
#define CW_GPU_REASON_HW_THERMAL 0x40ULL
#define CW_GPU_REASON_HW_POWER_BRAKE 0x80ULL
#define CW_GPU_REASON_DISPLAY 0x100ULL
#define CW_GPU_REASON_THERMAL (CW_GPU_REASON_SW_THERMAL | CW_GPU_REASON_HW_THERMAL)
#define CW_GPU_REASON_POWER (CW_GPU_REASON_SW_POWER_CAP | CW_GPU_REASON_HW_POWER_BRAKE)
#define CW_GPU_REASON_KNOWN 0x1ffULL

struct cw_gpu_device {
	int index;
	char uuid[96];
	char pci[32];  /* "00000000:3B:00.0" as NVML prints it */
	char name[96];
	int64_t mem_total;      /* bytes, -1 unknown */
	int64_t power_limit_mw; /* enforced limit, -1 unknown */
	int64_t max_sm_mhz, max_mem_mhz;
	int mig;                /* MIG mode enabled */
	int parent;             /* MIG instance: index of its board, else -1 */
};

struct cw_gpu_sample {
	uint64_t mono_ns, wall_ns;
	int device;
	int64_t gpu_util, mem_util;          /* % */
	int64_t mem_used, mem_free, mem_reserved, mem_total; /* bytes */
	int64_t temp_gpu, temp_mem;          /* C */
	int64_t power_mw;
	int64_t energy_mj;                   /* since driver load */
	int64_t sm_mhz, mem_mhz;
	int64_t reasons;                     /* CW_GPU_REASON_* bits */
	int64_t ecc_sbe, ecc_dbe;            /* volatile corrected / uncorrected */
	int64_t pcie_replay;
	int64_t retired_sbe, retired_dbe;    /* retired pages by cause */
	int64_t remap_corr, remap_unc, remap_pending, remap_failure;
	int64_t nvlink_errors;               /* sum over active links and DL counters */
};

struct cw_gpu_proc {
	uint32_t pid;
	int64_t used_bytes; /* -1 unknown (NVML_VALUE_NOT_AVAILABLE) */
	int64_t sm_util, mem_util; /* % over the last interval, -1 unknown */
};

/* The readings gpu_util .. nvlink_errors, in order (the gpu_samples
 * columns), addressed from the start of the struct. */
#define CW_GPU_NREADINGS 23
_Static_assert(offsetof(struct cw_gpu_sample, nvlink_errors) - offsetof(struct cw_gpu_sample, gpu_util) ==
		       (CW_GPU_NREADINGS - 1) * sizeof(int64_t),
	       "cw_gpu_sample readings are contiguous int64_t");
static inline int64_t *cw_gpu_reading(struct cw_gpu_sample *s, int i)
{
	return (int64_t *)((char *)s + offsetof(struct cw_gpu_sample, gpu_util) + (size_t)i * sizeof(int64_t));
}

/* Marks every field unknown (-1). */
void cw_gpu_sample_clear(struct cw_gpu_sample *s);
/* Replaces readings that cannot be true (utilization above 100 %, memory
 * used above total, a temperature outside -40..200 C, clocks above
 * 20 GHz, power above 10 kW, counters above 2^53, unknown reason bits)
 * with -1. The driver is trusted to be the driver, but a broken board, a
 * shim library or a mismatched struct layout returns garbage, and garbage
 * must not become a throttling verdict. Returns how many fields it reset. */
int cw_gpu_sample_sanitize(struct cw_gpu_sample *s);
/* "sw_power_cap,hw_thermal" for the set bits (idle and display clock
 * included); "" for none. */
void cw_gpu_reasons_text(int64_t reasons, char *buf, unsigned len);

#endif
